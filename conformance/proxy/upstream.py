"""The proxy's client to its upstream: HTTP/1.1 over kept-alive connections, bodies as streams.

The forwarder's second hop costs most of what the proxy adds to an exchange, so it is kept
small: each connection is an asyncio protocol whose answers httptools (uvicorn's own HTTP
parser, a dependency of uvicorn[standard]) parses as they arrive, and the pool is a stack of
idle connections, the most recently used first, so that taking one costs nothing whatever
the number of connections (httpx's pool looked at every connection it held, twice an
exchange: at 50 connections most of the proxy's CPU time). What it sends is what it is given:
the request target as the client wrote it, the headers in their order and case, a ``Host``
naming the upstream, and the body as it comes (a streamed body of unknown length chunked).

A connection is reused when its answer allowed it (HTTP/1.1 keep-alive, the body read to its
end) and it was idle less than :data:`KEEP_ALIVE_EXPIRY` seconds (servers close idle ones:
uvicorn after 5). A request that finds its reused connection closed by the upstream before
any byte of the answer is sent once more on a new connection when it is safe to repeat
(:data:`RETRIED`: its method is idempotent and its body was sent whole).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httptools

from mockserver.platform.tls import tls_context

KEEP_ALIVE_EXPIRY = 5.0  # seconds an idle connection is kept (as httpcore's default)
KEPT_IDLE = 200  # idle connections kept at most
READ_HIGH_WATER = 1 << 18  # answer bytes buffered before reading from the upstream pauses
RETRIED = frozenset({b"GET", b"HEAD", b"OPTIONS", b"PUT", b"DELETE", b"TRACE"})
_NO_BODY_STATUSES = frozenset({204, 304})


class UpstreamError(Exception):
    """The upstream did not answer: it could not be reached, it closed the connection, it
    timed out, or what it sent was not HTTP/1.1."""


class _Connection(asyncio.Protocol):
    """One connection to the upstream; the answer it is reading, if any."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout  # seconds a write may wait for the upstream to read
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.error: BaseException | None = None
        self.idle_since = 0.0
        self._writable: asyncio.Future[None] | None = None
        self.response: Response | None = None

    # -- asyncio.Protocol -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None or response.complete:  # bytes nobody asked for: not to be trusted
            self.close()
            return
        try:
            response.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            response.fail(UpstreamError(f"the upstream's answer is not HTTP/1.1: {exc}"))
            self.close()

    def eof_received(self) -> bool:
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        if self.response is not None:
            self.response.lost(exc)

    def pause_writing(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        self._writable = None

    # -- use --------------------------------------------------------------------------------------

    async def write(self, data: bytes) -> None:
        assert self.transport is not None
        if self.lost:
            raise UpstreamError("the upstream closed the connection")
        self.transport.write(data)
        if self._writable is not None:
            try:
                async with asyncio.timeout(self.timeout):
                    await self._writable
            except TimeoutError:
                raise UpstreamError(f"the upstream read nothing for {self.timeout:g} s") from None

    def usable(self, now: float) -> bool:
        transport = self.transport
        return (
            not self.lost
            and transport is not None
            and not transport.is_closing()
            and now - self.idle_since < KEEP_ALIVE_EXPIRY
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


class Response:
    """The upstream's answer: ``status_code``, ``headers`` (raw, as sent), and its body read
    with :meth:`read` (each call: what has arrived since, and whether that was the end)."""

    def __init__(self, connection: _Connection, method: bytes, pool: Upstream) -> None:
        self.connection = connection
        self.method = method
        self.pool = pool
        self.parser = httptools.HttpResponseParser(self)
        self.status_code = 0
        self.headers: list[tuple[bytes, bytes]] = []
        self.started = False  # any byte of the answer received
        self.headers_done = False
        self.complete = False
        self.until_close = False  # neither Content-Length nor chunked: the body ends with EOF
        self.failure: BaseException | None = None
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None

    # -- the parser's callbacks -------------------------------------------------------------------

    def on_message_begin(self) -> None:
        self.started = True

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200:  # an interim answer (100 Continue): the final one follows
            self.headers = []
            return
        self.status_code = status
        self.headers_done = True
        if self.method == b"HEAD" or status in _NO_BODY_STATUSES:
            self.complete = True  # no body follows, whatever Content-Length says
        else:
            framed = False
            for name, value in self.headers:
                lowered = name.lower()
                if lowered == b"content-length" or (
                    lowered == b"transfer-encoding" and b"chunked" in value.lower()
                ):
                    framed = True
            self.until_close = not framed
        self._wake()

    def on_body(self, body: bytes) -> None:
        if self.complete:
            return
        self._chunks.append(body)
        self._buffered += len(body)
        if self._buffered > READ_HIGH_WATER and not self._paused:
            self._paused = True
            assert self.connection.transport is not None
            self.connection.transport.pause_reading()
        self._wake()

    def on_message_complete(self) -> None:
        if not self.headers_done:
            return  # the end of an interim answer
        self.complete = True
        self._wake()

    # -- the connection's events ------------------------------------------------------------------

    def fail(self, exc: BaseException) -> None:
        if self.failure is None:
            self.failure = exc
        self._wake()

    def lost(self, exc: Exception | None) -> None:
        if self.complete:
            return
        if self.headers_done and self.until_close and exc is None:
            self.complete = True  # the end of a body read until the connection closed
        else:
            reason = f": {exc!r}" if exc else ""
            self.fail(UpstreamError("the upstream closed the connection" + reason))
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _wait(self, timeout: float) -> None:
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await self._waiter
        except TimeoutError:
            raise UpstreamError(f"the upstream did not answer within {timeout:g} s") from None
        finally:
            self._waiter = None

    # -- reading ----------------------------------------------------------------------------------

    async def head(self, timeout: float) -> None:
        """Wait for the status line and headers."""
        while not self.headers_done:
            if self.failure is not None:
                raise self.failure
            await self._wait(timeout)

    async def read(self, timeout: float) -> tuple[bytes, bool]:
        """What of the body has arrived (waiting for some when none has), and whether that
        was all of it."""
        while not self._chunks and not self.complete:
            if self.failure is not None:
                raise self.failure
            await self._wait(timeout)
        if len(self._chunks) == 1:
            data = self._chunks.popleft()
        else:
            data = b"".join(self._chunks)
            self._chunks.clear()
        self._buffered = 0
        if self._paused:
            self._paused = False
            assert self.connection.transport is not None
            self.connection.transport.resume_reading()
        return data, self.complete

    def close(self) -> None:
        """Give the connection back to the pool when the answer allows it, else close it."""
        connection = self.connection
        connection.response = None
        if (
            self.complete
            and self.failure is None
            and not self.until_close
            and self.method != b"HEAD"
            and self.parser.should_keep_alive()
        ):
            self.pool.release(connection)
        else:
            connection.close()


class Upstream:
    """Connections to one upstream (``http://`` or ``https://`` host and port)."""

    def __init__(self, url: str, *, timeout: float, connect_timeout: float) -> None:
        parts = urlsplit(url)
        self.tls = parts.scheme == "https"
        self.hostname = parts.hostname or ""
        self.port = parts.port or (443 if self.tls else 80)
        default = (self.tls and self.port == 443) or (not self.tls and self.port == 80)
        host = f"[{self.hostname}]" if ":" in self.hostname else self.hostname
        self.host_header = (host if default else f"{host}:{self.port}").encode("idna")
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.idle: list[_Connection] = []
        self._ssl: ssl.SSLContext | None = None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self.tls and self._ssl is None:
            self._ssl = tls_context()  # the kit's one verifying context, as httpx's
        try:
            async with asyncio.timeout(self.connect_timeout):
                _, connection = await loop.create_connection(
                    lambda: _Connection(self.timeout),
                    self.hostname,
                    self.port,
                    ssl=self._ssl if self.tls else None,
                    server_hostname=self.hostname if self.tls else None,
                )
        except TimeoutError:
            raise UpstreamError(f"could not connect within {self.connect_timeout:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise UpstreamError(f"could not connect: {exc!r}") from exc
        return connection

    def _take(self) -> _Connection | None:
        now = time.monotonic()
        while self.idle:
            connection = self.idle.pop()
            if connection.usable(now):
                return connection
            connection.close()
        return None

    def release(self, connection: _Connection) -> None:
        transport = connection.transport
        if (
            connection.lost
            or transport is None
            or transport.is_closing()
            or len(self.idle) >= KEPT_IDLE
        ):
            connection.close()
            return
        connection.idle_since = time.monotonic()
        self.idle.append(connection)

    async def send(
        self,
        method: str,
        target: str,
        headers: list[tuple[bytes, bytes]],
        body: bytes | AsyncIterator[bytes],
        *,
        length: bool,
    ) -> Response:
        """Send a request; answer once its status line and headers have arrived.

        ``headers`` are sent as given (without ``Host``, which names the upstream); a
        ``bytes`` body is sent whole, an iterator's chunks as they come, chunked when
        ``length`` says the headers give no ``Content-Length``."""
        verb = method.encode("ascii")
        head = [
            b"%s %s HTTP/1.1\r\nhost: %s\r\n" % (verb, target.encode("latin-1"), self.host_header)
        ]
        head += [b"%s: %s\r\n" % pair for pair in headers]
        streamed = not isinstance(body, bytes)
        if streamed and not length:
            head.append(b"transfer-encoding: chunked\r\n")
        elif not streamed and not length and (body or verb in (b"POST", b"PUT", b"PATCH")):
            head.append(b"content-length: %d\r\n" % len(body))  # as httpx sends it
        head.append(b"\r\n")
        start = b"".join(head)
        for attempt in (0, 1):
            connection = self._take() if attempt == 0 else None
            reused = connection is not None
            if connection is None:
                connection = await self._connect()
            response = Response(connection, verb, self)
            connection.response = response
            try:
                if streamed:
                    await connection.write(start)
                    await _send_stream(connection, body, chunked=not length)  # type: ignore[arg-type]
                else:
                    await connection.write(start + body if body else start)  # type: ignore[operator]
                await response.head(self.timeout)
                return response
            except UpstreamError:
                if response.headers_done:  # it answered before reading the whole body (a 413)
                    return response
                connection.response = None
                connection.close()
                if not (reused and not response.started and not streamed and verb in RETRIED):
                    raise
            except BaseException:
                connection.response = None
                connection.close()
                raise
        raise AssertionError("unreachable")

    async def aclose(self) -> None:
        while self.idle:
            self.idle.pop().close()


async def _send_stream(
    connection: _Connection, body: AsyncIterator[bytes], *, chunked: bool
) -> None:
    async for chunk in body:
        if not chunk:
            continue
        await connection.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
    if chunked:
        await connection.write(b"0\r\n\r\n")
