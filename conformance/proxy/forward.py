"""Forwarding: every request to the upstream as the client sent it, and its answer back.

:class:`Forwarder` is an ASGI application (uvicorn serves it). It forwards any method, every
header but the hop-by-hop ones (:data:`HOP_BY_HOP`, and those a ``Connection`` header names),
any status, and both bodies as streams: a body is passed on chunk by chunk as it arrives, never
held whole, and a compressed body is passed on compressed (``Content-Encoding`` untouched).
Connections to the upstream are kept alive and reused (httpx's pool); the client's own are
kept alive by uvicorn. A base path in either URL is honoured: the proxy's own (``--listen
HOST:PORT/PATH``: a request below it is forwarded without it) and the upstream's (``--upstream
https://host/gw``: every request is forwarded below it).

What it *keeps* of each exchange, for judging, is bounded: at most ``keep`` bytes of each body
(:data:`MAX_KEPT_BODY`); a body longer than that is forwarded whole and marked not kept whole
(:attr:`Seen.request_whole`, :attr:`Seen.response_whole`), so that nothing is judged on a
truncated body. When it has forwarded an exchange it hands it to ``on_seen`` (which must not
block: the proxy's session queues it for its judge thread).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from conformance.target import MAX_KEPT_BODY

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"trailers",
        b"transfer-encoding",
        b"upgrade",
        b"host",
    }
)
#: Headers httpx adds to a request when the client sent none; the proxy removes them again.
_CLIENT_DEFAULTS = ("accept", "accept-encoding", "user-agent")


class _NoCookies(httpx.Cookies):
    """The proxy keeps no cookies: each request carries what its client sent, nothing else."""

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


@dataclass
class Seen:
    """One exchange as it passed through (raw headers: secrets are masked when it is kept)."""

    method: str
    url: str  # the upstream URL the request went to
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int
    response_headers: list[tuple[str, str]]
    response_body: bytes  # as it came: still compressed when it was
    elapsed: float  # seconds from sending the request to the body's last byte
    total: float = 0.0  # seconds from the request's arrival to the answer's last byte sent
    request_whole: bool = True
    response_whole: bool = True
    started: float = field(default_factory=time.time)  # epoch seconds


class _Kept:
    """The first ``limit`` bytes of a stream, and whether that was all of it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.parts: list[bytes] = []
        self.size = 0
        self.whole = True

    def add(self, chunk: bytes) -> None:
        room = self.limit - self.size
        if len(chunk) > room:
            self.whole = False
            chunk = chunk[: max(0, room)]
        if chunk:
            self.parts.append(chunk)
            self.size += len(chunk)

    def bytes(self) -> bytes:
        return b"".join(self.parts)


class Forwarder:
    """The ASGI application that forwards to ``upstream`` (see the module's description)."""

    def __init__(
        self,
        upstream: str,
        on_seen: Callable[[Seen], None],
        *,
        listen_path: str = "",
        keep: int = MAX_KEPT_BODY,
        timeout: float = 300.0,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.base_path = urlsplit(self.upstream).path
        self.listen_path = listen_path.rstrip("/")
        self.on_seen = on_seen
        self.keep = keep
        self.timeout = timeout
        self.client: httpx.AsyncClient | None = None
        self.unreachable = 0  # requests the upstream did not answer (502 from the proxy)

    def _client(self) -> httpx.AsyncClient:
        if self.client is None:
            self.client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 30.0)),
                follow_redirects=False,
                limits=httpx.Limits(max_connections=1000, max_keepalive_connections=200),
                cookies=_NoCookies(),
                trust_env=False,
            )
            self.client._cookies = _NoCookies()  # the client's own jar: never filled
        return self.client

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return  # a websocket is not part of an HTTP API's contract: refused by not accepting
        path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        if self.listen_path:
            rest = path[len(self.listen_path) :]
            if not path.startswith(self.listen_path) or (rest and not rest.startswith("/")):
                await _plain(send, 404, f"conformance proxy: not below {self.listen_path}\n")
                return
            path = rest or "/"
        url = self.upstream + path
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        await self._forward(scope, receive, send, url)

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _forward(self, scope: dict[str, Any], receive: Any, send: Any, url: str) -> None:
        arrived = time.perf_counter()
        method = scope["method"]
        raw = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        named = _connection_names(scope["headers"])
        forwarded = [(k, v) for k, v in raw if k.lower().encode() not in named]
        lengths = [v for k, v in raw if k.lower() == "content-length"]
        chunked = any(k.lower() == "transfer-encoding" and "chunked" in v.lower() for k, v in raw)
        kept = _Kept(self.keep)
        content: bytes | AsyncIterator[bytes]
        if lengths and lengths[0].isdigit() and int(lengths[0]) <= self.keep:
            content = await _read_all(receive)
            kept.add(content)
        elif lengths or chunked:
            content = _stream(receive, kept)
        else:
            content = b""
        client = self._client()
        request = client.build_request(method, url, headers=forwarded, content=content)
        sent = {k.lower() for k, _ in forwarded}
        for name in _CLIENT_DEFAULTS:
            if name not in sent:
                request.headers.pop(name, None)
        started = time.perf_counter()
        try:
            response = await client.send(request, stream=True)
        except httpx.TransportError as exc:
            self.unreachable += 1
            await _plain(send, 502, f"conformance proxy: the upstream did not answer: {exc!r}\n")
            return
        body = _Kept(self.keep)
        try:
            headers = [
                (k, v)
                for k, v in response.headers.raw
                if k.lower() not in HOP_BY_HOP
                and k.lower() not in _connection_names(response.headers.raw)
            ]
            await send(
                {"type": "http.response.start", "status": response.status_code, "headers": headers}
            )
            async for chunk in response.aiter_raw():
                body.add(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()
        self.on_seen(
            Seen(
                method=method,
                url=url,
                request_headers=raw,
                request_body=kept.bytes(),
                status=response.status_code,
                response_headers=[
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers.raw
                ],
                response_body=body.bytes(),
                elapsed=time.perf_counter() - started,
                total=time.perf_counter() - arrived,
                request_whole=kept.whole,
                response_whole=body.whole,
            )
        )


def _connection_names(headers: list[tuple[bytes, bytes]]) -> frozenset[bytes]:
    """The hop-by-hop headers a ``Connection`` header names (besides :data:`HOP_BY_HOP`)."""
    named = {
        token.strip().lower()
        for k, v in headers
        if k.lower() == b"connection"
        for token in v.split(b",")
    }
    return frozenset(named) | HOP_BY_HOP


async def _read_all(receive: Any) -> bytes:
    parts = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            break
        parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(parts)


async def _stream(receive: Any, kept: _Kept) -> AsyncIterator[bytes]:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        chunk = message.get("body", b"")
        if chunk:
            kept.add(chunk)
            yield chunk
        if not message.get("more_body", False):
            return


async def _plain(send: Any, status: int, text: str) -> None:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", b"%d" % len(body)),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
