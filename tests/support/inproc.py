"""An httpx client that calls an ASGI app in this process, one thread hop per exchange.

Starlette's ``TestClient`` crosses to its event loop's thread for every ASGI message (about
eight times a request); here the whole exchange runs as one coroutine on a loop thread of the
client's own (httpx's ``ASGITransport``), and the app's lifespan is started and ended as a
server would. Exceptions the app raises reach the test, as with ``TestClient`` (unless asked
to answer them as a 500).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx


class _LoopTransport(httpx.BaseTransport):
    def __init__(self, app: Any, raise_app_exceptions: bool) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="asgi-loop", daemon=True)
        self.inner = httpx.ASGITransport(app, raise_app_exceptions=raise_app_exceptions)
        self.lifespan: asyncio.Future[None] | None = None
        self.to_app: asyncio.Queue[dict[str, Any]] | None = None
        self.from_app: asyncio.Queue[dict[str, Any]] | None = None

    def start(self) -> None:
        self.thread.start()
        self._call(self._lifespan("startup"))

    def close(self) -> None:
        if self.thread.is_alive():
            self._call(self._lifespan("shutdown"))
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            self.loop.close()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._call(self._exchange(request))

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    async def _exchange(self, request: httpx.Request) -> httpx.Response:
        request.stream = httpx.ByteStream(request.read())
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        return httpx.Response(
            response.status_code, headers=response.headers, content=body, request=request
        )

    async def _lifespan(self, phase: str) -> None:
        if self.to_app is None:
            self.to_app, self.from_app = asyncio.Queue(), asyncio.Queue()
            scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
            self.lifespan = asyncio.ensure_future(
                self.app(scope, self.to_app.get, self.from_app.put)
            )
        assert self.from_app is not None and self.lifespan is not None
        await self.to_app.put({"type": f"lifespan.{phase}"})
        answer = await self.from_app.get()
        if answer["type"] != f"lifespan.{phase}.complete":
            raise RuntimeError(f"the app's lifespan {phase} failed: {answer}")
        if phase == "shutdown":
            await self.lifespan


class InProcessClient(httpx.Client):
    """``with InProcessClient(app, base_url=...) as http:`` the app started, then ended.
    ``raise_app_exceptions=False`` answers an exception the app raises as a 500 instead."""

    def __init__(
        self,
        app: Any,
        base_url: str = "http://mock.test",
        raise_app_exceptions: bool = True,
        **kwargs: Any,
    ) -> None:
        self._loop_transport = _LoopTransport(app, raise_app_exceptions)
        super().__init__(transport=self._loop_transport, base_url=base_url, **kwargs)

    def __enter__(self) -> InProcessClient:
        self._loop_transport.start()
        super().__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        super().__exit__(*exc)  # closes the transport: the lifespan's shutdown, the loop ended
