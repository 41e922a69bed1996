"""The mock as one ASGI application: the emulated API, and the control plane under ``/_mock/``."""

from __future__ import annotations

from starlette.types import Receive, Scope, Send

from mockserver import areas
from mockserver.dispatch import Dispatcher
from mockserver.registry import bind
from mockserver.runtime import Runtime
from mockserver.settings import Settings

CONTROL_PREFIX = "/_mock/"


class MockApp:
    """Routes ``/_mock/`` to the control plane (when on) and everything else to the API."""

    def __init__(self, settings: Settings | None = None) -> None:
        areas.load()
        self.settings = settings or Settings()
        self.runtime = Runtime(self.settings)
        self.dispatcher = Dispatcher(self.runtime, bind(self.runtime.contract))
        self.control = None
        if self.settings.control_plane:
            from mockserver.control.plane import ControlPlane

            self.control = ControlPlane(self.runtime, self.settings.control_token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if self.control is not None and scope["path"].startswith(CONTROL_PREFIX):
            await self.control(scope, receive, send)
        else:
            await self.dispatcher(scope, receive, send)

    async def lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return


def create_app(settings: Settings | None = None) -> MockApp:
    return MockApp(settings)
