"""``conformance proxy --fallback-mock``: the operations a deployment still lacks, answered by
the bundled mock.

An exchange falls back when its request matches an operation of the contract and the upstream
answers it ``501``, or ``404`` *for its route*: a 404 whose body is not the contract's standard
error envelope (``success: false``, ``error``, ``code``) with a code the contract states for a
404 (a framework's ``{"detail": "Not Found"}``, an HTML page). A contract-shaped ``404
not_found`` is the deployment answering (a record it does not have) and is passed on as it came.

The bundled mock runs inside the proxy's process (:class:`mockserver.testing.LocalServer`: its
own thread and event loop, on a free loopback port), started once with the proxy, on the real
clock, in one sandbox made for the proxy's run (its own records, credits, clock and keys, on
the real clock too, so that jobs move on; callbacks and webhooks to loopback addresses allowed,
the relay's among them). In-process rather than a subprocess: it starts in about half a second
(0.56 s measured, and 0.11 s for the sandbox), nothing of it can outlive the proxy (a child
process would be orphaned by a SIGKILL), idle it costs next to nothing (10 ms of CPU in 5 s
measured: its server looks for a stop every 0.1 s), and only the exchanges that fall back pay
for its work (its Python shares this process's interpreter with forwarding while it answers).
It starts after the judge's process is forked, and runs on an event loop of its own: the
forwarder awaits its answers as it awaits the upstream's. Its control plane is on loopback,
not reachable through the proxy (only the contract's operations fall back).

The request goes to the mock as the client sent it (the hop-by-hop headers aside), with its
bearer key replaced by the sandbox's owner key: the deployment's keys mean nothing to the mock.
A request without a key is sent without one (the mock answers it ``401``, as the contract
says). The mock's answer (status, headers, body, streamed) is what the client gets, and what
is judged; the exchange carries a :class:`FallbackMark` so that the judge keeps its findings
apart from the deployment's and the reports mark it (and, no forwarding, it is left out of the
forwarding's added latency).

A request whose body was longer than the proxy keeps (:data:`~conformance.target.MAX_KEPT_BODY`)
was streamed to the upstream and cannot be sent again: it gets the upstream's answer, and its
mark says why it did not fall back. So does an exchange the mock could not be reached for.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from conformance.contract import Contract
from conformance.mockprocess import FixtureKey, owner_key
from conformance.proxy.decoding import decoded
from conformance.proxy.forward import Seen, _connection_names, _Kept
from conformance.proxy.upstream import Response, Upstream, UpstreamError
from conformance.target import MAX_KEPT_BODY, path_below

FALLBACK_STATUSES = frozenset({404, 501})
#: How long the sandbox lives without a call: the proxy's whole run (the mock's default is an
#: hour, after which the sandbox's key would answer 401).
SANDBOX_TTL = 10 * 365 * 24 * 3600.0


@dataclass(frozen=True)
class FallbackMark:
    """What ``--fallback-mock`` did with one exchange (:attr:`Seen.fallback`)."""

    operation_id: str
    upstream_status: int  # what the upstream answered: 404 (for the route) or 501
    answered: bool  # the mock answered; False: the upstream's answer was passed on (``why``)
    why: str = ""

    @property
    def reason(self) -> str:
        if self.upstream_status == 404:
            return "upstream said 404 for the route"
        return f"upstream said {self.upstream_status}"

    def line(self) -> str:
        """The line printed as it happens."""
        if self.answered:
            return f"fallback: {self.operation_id} answered by the bundled mock ({self.reason})"
        return (
            f"fallback: {self.operation_id} not answered by the bundled mock ({self.reason}): "
            f"{self.why}; the upstream's answer was passed on"
        )


class MockFallback:
    """The forwarder's fallback (``Forwarder(fallback=...)``): for an answer whose status is
    in :attr:`statuses`, ``await fallback(seen, response, send)`` answers the client itself and
    fills ``seen`` (True), or leaves the exchange to the forwarder untouched (False: the request
    is no operation of the contract)."""

    statuses = FALLBACK_STATUSES

    def __init__(
        self,
        contract: Contract,
        upstream: str,
        *,
        keep: int = MAX_KEPT_BODY,
        timeout: float = 300.0,
    ) -> None:
        self.contract = contract
        self.upstream = upstream.rstrip("/")
        self.base_path = urlsplit(self.upstream).path
        self.not_found_codes = frozenset(contract.full.error_codes.get(404, ()))
        self.keep = keep
        self.timeout = timeout
        self.server: Any = None
        self.base_url = ""
        self.sandbox = ""
        self.key = ""
        self.client: Upstream | None = None

    # -- life -----------------------------------------------------------------------------------

    def start(self) -> MockFallback:
        """Start the bundled mock and make the run's sandbox (RuntimeError when it cannot)."""
        from mockserver.testing import LocalServer

        self.server = LocalServer(clock="real", sandbox_ttl=SANDBOX_TTL, log_level="warning")
        try:
            self.server.start()
            answer = httpx.post(
                self.server.base_url + "/_mock/sandboxes",
                json={"clock": "real"},
                timeout=60,
                trust_env=False,
            )
            if answer.status_code != 200:
                raise RuntimeError(f"{answer.status_code} {answer.text[:300]}")
            sandbox = answer.json()["sandbox"]
            keys = [
                FixtureKey(k["key"], k["workspace"], k["member"], k["role"])
                for k in sandbox["keys"]
            ]
            owner = owner_key(keys)
            if owner is None:
                raise RuntimeError("its sandbox has no owner key")
        except Exception as exc:
            self.stop()
            raise RuntimeError(f"the bundled mock could not be started: {exc}") from exc
        self.base_url, self.sandbox, self.key = self.server.base_url, sandbox["id"], owner.key
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    async def aclose(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None

    def _client(self) -> Upstream:
        if self.client is None:
            self.client = Upstream(
                self.base_url, timeout=self.timeout, connect_timeout=min(self.timeout, 30.0)
            )
        return self.client

    # -- one exchange ---------------------------------------------------------------------------

    async def __call__(self, seen: Seen, response: Response, send: Any) -> bool:
        op = self.contract.full.find(seen.method, path_below(seen.url, self.base_path))
        if op is None:
            return False
        upstream = _Buffered(response, self.keep, self.timeout)
        try:
            if response.status_code == 404 and not self._for_route(await upstream.head()):
                await upstream.pass_on(seen, send)
                return True
            mark = FallbackMark(op.operation_id, response.status_code, answered=True)
            if not seen.request_whole:
                seen.fallback = _replace(
                    mark,
                    f"its request's body was longer than the proxy keeps ({self.keep} bytes): "
                    "streamed to the upstream, it cannot be sent again",
                )
                await upstream.pass_on(seen, send)
                return True
            try:
                answer = await self._ask(seen)
            except UpstreamError as exc:
                why = f"the bundled mock did not answer ({type(exc).__name__})"  # bounded: no repr
                seen.fallback = _replace(mark, why)
                await upstream.pass_on(seen, send)
                return True
        finally:
            if not upstream.passing:
                response.close()
        seen.fallback = mark
        started = time.perf_counter()
        try:
            await _relay(seen, answer, _chunks(answer, self.timeout), [], send, self.keep)
        finally:
            answer.close()
        seen.elapsed = time.perf_counter() - started
        return True

    def _for_route(self, head: tuple[bytes, str | None]) -> bool:
        """Whether a 404 says the route is not there: its body is not the contract's error
        envelope with a code the contract states for 404."""
        body, encoding = head
        try:
            parsed = json.loads(decoded(body, encoding))
        except ValueError:
            return True
        return not (
            isinstance(parsed, dict)
            and parsed.get("success") is False
            and isinstance(parsed.get("error"), str)
            and parsed.get("code") in self.not_found_codes
        )

    async def _ask(self, seen: Seen) -> Response:
        """The request, sent to the mock in the run's sandbox."""
        raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in seen.request_headers]
        names = _connection_names(raw)
        headers = []
        for name, value in raw:
            if name.lower() in names:
                continue
            if name.lower() == b"authorization" and value[:7].lower() == b"bearer ":
                value = b"Bearer " + self.key.encode("latin-1")
            headers.append((name, value))
        length = any(name.lower() == b"content-length" for name, _ in headers)
        target = seen.url[len(self.upstream) :] or "/"
        client = self._client()
        return await client.send(seen.method, target, headers, seen.request_body, length=length)


def _replace(mark: FallbackMark, why: str) -> FallbackMark:
    return FallbackMark(mark.operation_id, mark.upstream_status, answered=False, why=why)


class _Buffered:
    """The upstream's answer, its first bytes read ahead (to tell a route's 404 from the
    deployment's) and passed on, with the rest, when it is the client's answer after all."""

    def __init__(self, response: Response, keep: int, timeout: float) -> None:
        self.response = response
        self.keep = keep
        self.chunks = _chunks(response, timeout)
        self.read: list[bytes] = []
        self.ended = False
        self.passing = False

    async def head(self) -> tuple[bytes, str | None]:
        """The body's first bytes (all of it, up to ``keep``), and its content encoding."""
        size = 0
        while size <= self.keep:
            try:
                chunk = await anext(self.chunks)
            except StopAsyncIteration:
                self.ended = True
                break
            self.read.append(chunk)
            size += len(chunk)
        headers = self.response.headers
        encoding = next(
            (v.decode("latin-1") for k, v in headers if k.lower() == b"content-encoding"), None
        )
        return b"".join(self.read), encoding

    async def pass_on(self, seen: Seen, send: Any) -> None:
        self.passing = True
        started = time.perf_counter()
        rest = _nothing() if self.ended else self.chunks
        try:
            await _relay(seen, self.response, rest, self.read, send, self.keep)
        finally:
            self.response.close()
        seen.elapsed = time.perf_counter() - started


async def _chunks(response: Response, timeout: float) -> AsyncIterator[bytes]:
    """A response's body, as it arrives."""
    last = False
    while not last:
        chunk, last = await response.read(timeout)
        if chunk:
            yield chunk


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""  # an async generator that yields nothing


async def _relay(
    seen: Seen,
    response: Response,
    chunks: AsyncIterator[bytes],
    first: list[bytes],
    send: Any,
    keep: int,
) -> None:
    """Send ``response`` to the client (``first``, then ``chunks``) and fill ``seen`` with it."""
    raw = response.headers
    hop = _connection_names(raw)
    headers = [(k, v) for k, v in raw if k.lower() not in hop]
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    body = _Kept(keep)
    for chunk in first:
        body.add(chunk)
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    async for chunk in chunks:
        body.add(chunk)
        await send({"type": "http.response.body", "body": chunk, "more_body": True})
    await send({"type": "http.response.body", "body": b"", "more_body": False})
    seen.status = response.status_code
    seen.response_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in raw]
    seen.response_body = body.bytes()
    seen.response_whole = body.whole
