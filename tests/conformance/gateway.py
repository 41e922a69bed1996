"""A gateway that serves a deployment under a base path: ``/gw/v1/...`` reaches ``/v1/...``.

An ASGI app for tests (run it with tests/support/serve.py ``Served``). What it forwards is
unchanged: the method, the raw path below the prefix and the query, every request header (the
``Host`` too, as a gateway that preserves the host does) and the body; and back the status,
every response header (repeated ones, ``content-length`` and ``content-encoding`` included) and
the body's bytes as they came. A path outside the prefix answers 404, as a gateway does.
"""

from __future__ import annotations

from typing import Any

import httpx

PREFIX = "/gw"


class PrefixGateway:
    """``PrefixGateway(upstream)`` forwards ``PREFIX/<rest>`` to ``<upstream>/<rest>``."""

    def __init__(self, upstream: str, prefix: str = PREFIX) -> None:
        self.upstream = upstream.rstrip("/")
        self.prefix = prefix.encode("ascii")
        self.transport: httpx.AsyncHTTPTransport | None = None  # made on the server's loop

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw_path: bytes = scope.get("raw_path") or scope["path"].encode("utf-8")
        rest = raw_path.removeprefix(self.prefix)
        if rest == raw_path or (rest and not rest.startswith(b"/")):
            await _answer(send, 404, [(b"content-type", b"text/plain")], b"not under /gw\n")
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        url = self.upstream.encode("ascii") + (rest or b"/")
        if scope["query_string"]:
            url += b"?" + scope["query_string"]
        if self.transport is None:
            self.transport = httpx.AsyncHTTPTransport()
        request = httpx.Request(
            scope["method"], url.decode("latin-1"), headers=list(scope["headers"]), content=body
        )
        response = await self.transport.handle_async_request(request)
        try:
            raw = b"".join([chunk async for chunk in response.stream])  # type: ignore[union-attr]
        finally:
            await response.aclose()
        await _answer(send, response.status_code, response.headers.raw, raw)


async def _answer(send: Any, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
