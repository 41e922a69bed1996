"""Forwarding: every request to the upstream as the client sent it, and its answer back.

:class:`Forwarder` is an ASGI application (uvicorn serves it). It forwards any method, every
header but the hop-by-hop ones (:data:`HOP_BY_HOP`, and those a ``Connection`` header names),
any status, and both bodies as streams: a body is passed on chunk by chunk as it arrives, never
held whole, and a compressed body is passed on compressed (``Content-Encoding`` untouched).
Connections to the upstream are kept alive and reused (conformance/proxy/upstream.py); the
client's own are kept alive by uvicorn. The proxy keeps no cookies: each request carries what
its client sent (and a ``Host`` naming the upstream), nothing more. A base path in either URL
is honoured: the proxy's own (``--listen HOST:PORT/PATH``: a request below it is forwarded
without it) and the upstream's (``--upstream https://host/gw``: every request is forwarded
below it).

What it *keeps* of each exchange, for judging, is bounded: at most ``keep`` bytes of each body
(:data:`MAX_KEPT_BODY`); a body longer than that is forwarded whole and marked not kept whole
(:attr:`Seen.request_whole`, :attr:`Seen.response_whole`), so that nothing is judged on a
truncated body. When it has forwarded an exchange it hands it to ``on_seen`` (which must not
block: the proxy's session queues it for its judge thread).

A ``fallback`` (``--fallback-mock``: conformance/proxy/fallback.py) is offered each answer whose
status is one of its ``statuses``; when it takes the exchange it answers the client itself and
fills the :class:`Seen`. Without one, forwarding pays a single test for it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

from conformance.proxy.upstream import Response, Upstream, UpstreamError
from conformance.target import MAX_KEPT_BODY

if TYPE_CHECKING:
    from conformance.proxy.fallback import FallbackMark

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
    size: int = 0  # what it holds, about, on its way to the judge (conformance/proxy/process.py)
    fallback: FallbackMark | None = None  # what --fallback-mock did with it, if anything


class Fallback(Protocol):
    """Answers the client in the upstream's stead (conformance/proxy/fallback.py)."""

    statuses: frozenset[int]

    async def __call__(self, seen: Seen, response: Response, send: Any) -> bool: ...

    async def aclose(self) -> None: ...


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
        fallback: Fallback | None = None,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.base_path = urlsplit(self.upstream).path
        self.origin = self.upstream[: len(self.upstream) - len(self.base_path)]
        self.listen_path = listen_path.rstrip("/")
        self.on_seen = on_seen
        self.keep = keep
        self.timeout = timeout
        self.fallback = fallback
        self.client: Upstream | None = None
        self.unreachable = 0  # requests the upstream did not answer (502 from the proxy)

    def _client(self) -> Upstream:
        if self.client is None:
            self.client = Upstream(
                self.upstream, timeout=self.timeout, connect_timeout=min(self.timeout, 30.0)
            )
        return self.client

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None
        if self.fallback is not None:
            await self.fallback.aclose()

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
        raw: list[tuple[bytes, bytes]] = scope["headers"]
        named = _connection_names(raw)
        forwarded = [(k, v) for k, v in raw if k.lower() not in named]
        length = next((v for k, v in forwarded if k.lower() == b"content-length"), None)
        kept = _Kept(self.keep)
        content = await self._content(receive, raw, length, kept)
        started = time.perf_counter()
        try:
            response = await self._client().send(
                method, url[len(self.origin) :], forwarded, content, length=length is not None
            )
        except UpstreamError as exc:
            self.unreachable += 1
            await _plain(send, 502, f"conformance proxy: the upstream did not answer: {exc!r}\n")
            return
        seen = Seen(
            method=method,
            url=url,
            request_headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw],
            request_body=kept.bytes(),
            status=response.status_code,
            response_headers=[],
            response_body=b"",
            elapsed=0.0,
            request_whole=kept.whole,
        )
        fallback = self.fallback
        if (
            fallback is not None
            and response.status_code in fallback.statuses
            and await fallback(seen, response, send)
        ):
            self.on_seen(seen)
            return
        body = await self._answer(send, response)
        done = time.perf_counter()
        seen.response_headers = [
            (k.decode("latin-1"), v.decode("latin-1")) for k, v in response.headers
        ]
        seen.response_body, seen.response_whole = body.bytes(), body.whole
        seen.elapsed, seen.total = done - started, done - arrived
        self.on_seen(seen)

    async def _content(
        self, receive: Any, raw: list[tuple[bytes, bytes]], length: bytes | None, kept: _Kept
    ) -> bytes | AsyncIterator[bytes]:
        """The request's body to send on: read whole when its length is declared and no more
        than the proxy keeps, else streamed as it arrives (what is kept of it goes to
        ``kept``)."""
        chunked = any(k.lower() == b"transfer-encoding" and b"chunked" in v.lower() for k, v in raw)
        if length is not None and length.isdigit() and int(length) <= self.keep:
            content = await _read_all(receive)
            kept.add(content)
            return content
        if length is not None or chunked:
            return _stream(receive, kept)
        return b""

    async def _answer(self, send: Any, response: Response) -> _Kept:
        """The upstream's answer passed on to the client (hop-by-hop headers aside; a body
        that came whole, a small one as a rule, in one message); what was kept of its body."""
        body = _Kept(self.keep)
        try:
            hop = _connection_names(response.headers)
            headers = [(k, v) for k, v in response.headers if k.lower() not in hop]
            await send(
                {"type": "http.response.start", "status": response.status_code, "headers": headers}
            )
            last = False
            while not last:
                chunk, last = await response.read(self.timeout)
                body.add(chunk)
                await send({"type": "http.response.body", "body": chunk, "more_body": not last})
        finally:
            response.close()
        return body


def _connection_names(headers: list[tuple[bytes, bytes]]) -> frozenset[bytes]:
    """The hop-by-hop headers: :data:`HOP_BY_HOP` and those a ``Connection`` header names."""
    named = [
        token.strip().lower()
        for k, v in headers
        if k.lower() == b"connection"
        for token in v.split(b",")
    ]
    return HOP_BY_HOP.union(named) if named else HOP_BY_HOP


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
