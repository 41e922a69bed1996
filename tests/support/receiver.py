"""A webhook receiver for tests: a small ASGI app, served on loopback with tests.support.serve.

It records every delivery exactly as received (raw body bytes and headers) and answers from a
script: ``receiver.script([503, 503, 200])`` answers 503 twice then 200; an entry may be a
``(status, headers)`` pair, or ``"hang"`` to never answer.

The server lives for the whole session, so each test gets a fresh path prefix
(``receiver.url`` ends with it): a delivery that a mock from an earlier test still makes
to an older prefix is answered 200 and kept apart (``strays``), never taken for this test's
own, and never given this test's scripted answers. ``Delivery.path`` is the path after
the prefix.
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
    answer: Any = 200  # what the script answered it: a status, (status, headers), or "hang"


@dataclass
class Receiver:
    deliveries: list[Delivery] = field(default_factory=list)
    strays: list[Delivery] = field(default_factory=list)
    prefix: str = ""
    _script: list[Any] = field(default_factory=list)
    _release: asyncio.Event | None = None

    def script(self, answers: list[Any]) -> None:
        self._script = list(answers)

    def clear(self, prefix: str = "") -> None:
        """Forget what arrived, and take only what arrives under ``prefix`` from now on."""
        self.deliveries.clear()
        self.strays.clear()
        self._script = []
        self.prefix = prefix

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
        path: str = scope["path"]
        if not path.startswith(self.prefix + "/") and path != self.prefix:
            self.strays.append(Delivery(path, headers, body, time.time()))
            answer: Any = 200
        else:
            path = path[len(self.prefix) :] or "/"
            answer = self._script.pop(0) if self._script else 200
            self.deliveries.append(Delivery(path, headers, body, time.time(), answer))
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
