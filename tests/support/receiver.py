"""A webhook receiver for tests: a small ASGI app, served on loopback with tests.support.serve.

It records every delivery exactly as received (raw body bytes and headers) and answers from a
script: ``receiver.script([503, 503, 200])`` answers 503 twice then 200; an entry may be a
``(status, headers)`` pair, or ``"hang"`` to never answer.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request


@dataclass
class Delivery:
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float


@dataclass
class Receiver:
    deliveries: list[Delivery] = field(default_factory=list)
    _script: list[Any] = field(default_factory=list)
    _release: asyncio.Event | None = None

    def script(self, answers: list[Any]) -> None:
        self._script = list(answers)

    def clear(self) -> None:
        self.deliveries.clear()
        self._script = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    self._release = asyncio.Event()
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    if self._release is not None:
                        self._release.set()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = await Request(scope, receive).body()
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.deliveries.append(Delivery(scope["path"], headers, body, time.time()))
        answer = self._script.pop(0) if self._script else 200
        if answer == "hang":
            assert self._release is not None
            await self._release.wait()
            return
        status, extra = (answer, {}) if isinstance(answer, int) else answer
        out = [(b"content-type", b"text/plain")] + [
            (k.encode(), str(v).encode()) for k, v in extra.items()
        ]
        await send({"type": "http.response.start", "status": status, "headers": out})
        await send({"type": "http.response.body", "body": b"ok"})
