"""The mock as one ASGI application: the emulated API, and the control plane under ``/_mock/``."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from starlette.types import Receive, Scope, Send

from mockserver import areas
from mockserver.dispatch import Dispatcher, error_response, stamp_headers, store_unavailable
from mockserver.platform.envelope import new_request_id
from mockserver.registry import bind
from mockserver.runtime import Runtime
from mockserver.sandboxes import SandboxManager, sandbox_id_of_key
from mockserver.seams import Seams
from mockserver.settings import Settings
from mockserver.store import StoreError, open_store

CONTROL_PREFIX = "/_mock/"
log = logging.getLogger("mockserver")


def sandbox_token(scope: Scope) -> str | None:
    """The bearer token of a request when it is a sandbox's key (sandboxes.py)."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            token = value.decode("latin-1").removeprefix("Bearer ").strip()
            return token if sandbox_id_of_key(token) is not None else None
    return None


class MockApp:
    """Routes ``/_mock/`` to the control plane (when on) and everything else to the API.

    An API request runs against the default runtime, or against the sandbox its key names
    (sandboxes.py). ``seams`` (seams.py) are this app's: its every runtime reaches them as
    ``rt.seams``; the product's own when not given.
    """

    def __init__(self, settings: Settings | None = None, *, seams: Seams | None = None) -> None:
        areas.load()
        self.settings = settings or Settings()
        self.store = open_store(self.settings.store, self.settings.state)
        self.runtime = Runtime(
            self.settings,
            seams=seams,
            store=self.store.world("default") if self.store is not None else None,
        )
        self.seams = self.runtime.seams
        self.sandboxes = SandboxManager(
            self.runtime,
            ttl=self.settings.sandbox_ttl,
            limit=self.settings.max_sandboxes,
            store=self.store,
        )
        self.runtime.sandboxes = self.sandboxes
        self.dispatcher = Dispatcher(self.runtime.contract, bind(self.runtime.contract))
        self._clock_task: asyncio.Task[None] | None = None
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
        self.start_background()  # also when served without a lifespan (an ASGI test transport)
        if self.sandboxes.may_expire():
            try:
                await self.sandboxes.expire()
            except StoreError as error:  # housekeeping: swept again later; the request goes on
                log.warning("sandbox expiry: %s", error)
        if self.control is not None and scope["path"].startswith(CONTROL_PREFIX):
            await self.control(scope, receive, send)
            return
        runtime = self.runtime
        token = sandbox_token(scope)
        if token is not None:  # a sandbox's key: its runtime, if the sandbox is live
            try:
                runtime = await self.sandboxes.runtime_for_token(token) or runtime
            except StoreError as error:
                log.error("store failed finding the sandbox of a key: %s", error)
                request_id = new_request_id()
                response = error_response(store_unavailable(request_id))
                stamp_headers(response, request_id, None)
                await response(scope, receive, send)
                return
        await self.dispatcher(scope, receive, send, runtime)

    def start_background(self) -> None:
        """Start the delivery worker and, for the real clock, the scheduler's heartbeat."""
        self.runtime.delivery.start()
        real = self.runtime.clock.mode == "real" or any(
            runtime.clock.mode == "real" for runtime in self.sandboxes.runtimes()
        )
        if real and (self._clock_task is None or self._clock_task.done()):
            self._clock_task = asyncio.get_running_loop().create_task(self._heartbeat())

    async def _heartbeat(self) -> None:
        while True:
            for runtime in (self.runtime, *self.sandboxes.runtimes()):
                if runtime.clock.mode == "real":
                    try:
                        runtime.catch_up()
                        runtime.scheduler.tick()
                    except StoreError as error:  # the store is down: try again next beat
                        log.warning("scheduler heartbeat: %s", error)
            await asyncio.sleep(1.0)

    def close(self) -> None:
        """Let go of the store (its connection or file)."""
        if self.store is not None:
            self.store.close()

    async def stop_background(self) -> None:
        await self.sandboxes.close()
        await self.runtime.delivery.stop()
        if self._clock_task is not None:
            self._clock_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._clock_task
            self._clock_task = None

    async def lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.start_background()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.stop_background()
                await send({"type": "lifespan.shutdown.complete"})
                return


def create_app(settings: Settings | None = None, *, seams: Seams | None = None) -> MockApp:
    return MockApp(settings, seams=seams)
