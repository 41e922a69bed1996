"""``mockserver proxy``: the conformance proxy (conformance/proxy/) with the mock's inspector.

One port serves two things. Under ``/_mock/``, the operations in :data:`SERVED`: the inspector
(its page and files), the control plane's index and document, and the request journal's reads
(``GET /_mock/requests``), answered by the mock's own control plane (token rules included);
every other request, ``/_mock/...`` ones too, is forwarded to the upstream unchanged.

Each exchange forwarded is journalled as the mock journals its own answers (platform/journal.py:
method, path, operationId, status, error code, headers with credentials redacted, bodies
bounded, ``x-request-id``, duration), with :class:`~mockserver.platform.journal.Proxied`: the
upstream and the judge's verdict. The judge runs in a process of its own
(conformance/proxy/process.py); :class:`JournalingJudge` sends each verdict back over a pipe,
with the entry's ``seq`` the exchange carries (:class:`Journaled`), and a thread here gives
the entry its findings. Until then the entry is ``pending``, and the journal's ``settledSeq``
stays below it, so the inspector asks for it again.

What the mock would never journal is kept out here too: an ``x-secret`` field the upstream
answered, or a client sent to a path of no operation (the journal redacts the request bodies
of operations itself), reads ``[redacted]`` (conformance/proxy/redact.py). A compressed answer
is journalled decoded when it fits the journal's bound.

Needs the ``conformance`` extra (mockserver/proxy_cli.py says how to install it).
"""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import orjson
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from conformance.contract import Contract
from conformance.proxy.findings import Finding
from conformance.proxy.forward import Forwarder, Seen
from conformance.proxy.judge import Judge
from conformance.proxy.process import JudgeProcess
from conformance.proxy.redact import redacted_body, secret_fields
from conformance.target import Exchange, path_below
from mockserver.contract import Operation
from mockserver.control.handlers import control_index
from mockserver.control.plane import ControlPlane
from mockserver.dispatch import Router
from mockserver.platform.envelope import json_response
from mockserver.platform.errors import not_found
from mockserver.platform.journal import BODY_LIMIT, JOURNAL_SIZE, Body, Entry, Journal, Proxied
from mockserver.platform.jsonbody import JsonReader
from mockserver.platform.validation import Validated
from mockserver.runtime import Runtime
from mockserver.settings import Settings

#: The control-plane operations ``mockserver proxy`` answers itself: the inspector and what
#: its Requests view reads. Every other request goes upstream.
SERVED = frozenset(
    {
        "controlIndex",
        "controlOpenApi",
        "inspector",
        "inspectorIndex",
        "inspectorFile",
        "listRequests",
    }
)


@dataclass
class Journaled(Seen):
    """An exchange on its way to the judge, with the ``seq`` of its journal entry."""

    seq: int = 0


class JournalingJudge(Judge):
    """The proxy's judge (in the judge's process), sending each verdict back to the journal:
    ``(seq, verdict, [(rule, side, message), ...])``."""

    def __init__(self, contract: Contract, upstream: str, verdicts: Connection) -> None:
        super().__init__(contract, upstream)
        self.verdicts = verdicts

    def judge(self, seen: Seen) -> tuple[Exchange, list[Finding]]:
        seq = seen.seq if isinstance(seen, Journaled) else 0
        judged = self.judged
        try:
            exchange, findings = super().judge(seen)
        except Exception:
            self._send(seq, "dropped", [])
            raise
        verdict = "judged" if self.judged > judged else "outside"
        self._send(seq, verdict, [(f.rule, f.side, f.message) for f in findings])
        return exchange, findings

    def _send(self, seq: int, verdict: str, findings: list[tuple[str, str, str]]) -> None:
        if seq:
            self.verdicts.send((seq, verdict, findings))


class ProxyJournal(Journal):
    """The mock's journal, told which entries still wait for their verdict."""

    def __init__(self, reader: JsonReader, waiting: Callable[[], int | None]) -> None:
        super().__init__(reader)
        self._waiting = waiting

    def unsettled_seq(self) -> int | None:
        return self._waiting()


class NoSandboxes:
    """``mockserver proxy`` has one journal and no sandbox."""

    async def get(self, sandbox_id: str) -> Any:
        raise not_found(f"sandbox {sandbox_id!r}: mockserver proxy has none")


class ProxyPlane(ControlPlane):
    """The mock's control plane, answering only :data:`SERVED` (its index says so, and names
    the upstream, so that the inspector shows only its Requests view)."""

    def __init__(self, runtime: Runtime, token: str | None, upstream: str) -> None:
        super().__init__(runtime, token)
        self.upstream = upstream
        self.router = Router({k: op for k, op in self.contract.operations.items() if k in SERVED})

    def serves(self, method: str, path: str) -> bool:
        return self.router.match(method, path, encoded=True)[0] is not None

    async def transact(self, op: Operation, rt: Runtime, valid: Validated) -> Response:
        if op.operation_id != "controlIndex":
            return await super().transact(op, rt, valid)
        index = control_index(rt, valid)
        index["operations"] = [o for o in index["operations"] if o["operationId"] in SERVED]
        return json_response(200, {"success": True, **index, "proxy": {"upstream": self.upstream}})


class Inspected:
    """What ``mockserver proxy`` adds around ``conformance proxy`` (its ``Around``): the
    journal, the verdicts that reach it, and the port shared with the inspector."""

    def __init__(
        self,
        upstream: str,
        settings: Settings,
        *,
        guard: Callable[[Settings, str, bool], list[str]],
        generated: bool = False,
    ) -> None:
        """``guard`` says how the control plane is guarded, in the banner (the mock's own
        :func:`mockserver.cli.control_lines`: settings, base URL, whether the token was made)."""
        import multiprocessing

        self.upstream = upstream
        self.guard = guard
        self.generated = generated  # the control token is one this run made (said once)
        self.base_path = urlsplit(upstream).path.rstrip("/")
        # Made before the judge's process is forked: it writes, this process reads.
        self.reader, self.writer = multiprocessing.get_context("fork").Pipe(duplex=False)
        self.lock = threading.Lock()
        self.pending: dict[int, Proxied] = {}  # seq -> an entry waiting for its verdict
        self.runtime = Runtime(settings)
        self.runtime.journal = ProxyJournal(JsonReader(self.runtime.contract.limits), self.first)
        self.runtime.sandboxes = NoSandboxes()
        self.router = Router(self.runtime.contract.operations)
        self.secrets = secret_fields(self.runtime.contract.document)
        self.plane = ProxyPlane(self.runtime, settings.control_token, upstream)

    # -- Around ---------------------------------------------------------------------------------

    def make_judge(self, contract: Contract, upstream: str) -> Judge:
        self.reader.close()  # the judge's process only writes
        return JournalingJudge(contract, upstream, self.writer)

    def seen(self, judging: JudgeProcess) -> Callable[[Seen], None]:
        self.writer.close()  # this process only reads (EOF once the judge's process ends)
        threading.Thread(target=self._verdicts, name="proxy-verdicts", daemon=True).start()

        def on_seen(seen: Seen) -> None:
            entry = self.entry(seen)
            self.runtime.journal.record(entry)
            proxied = entry.proxied
            assert proxied is not None
            with self.lock:
                self.pending[entry.seq] = proxied
                if len(self.pending) > JOURNAL_SIZE:  # gone from the journal by now
                    del self.pending[next(iter(self.pending))]
            dropped = judging.dropped
            judging.seen(Journaled(**vars(seen), seq=entry.seq))
            if judging.dropped != dropped:
                self.settle(entry.seq, "dropped", [])

        return on_seen

    def app(self, forwarder: Forwarder) -> Any:
        return Front(self.plane, forwarder)

    def lines(self, url: str) -> list[str]:
        parts = urlsplit(url)
        base = f"{parts.scheme}://{parts.netloc}"
        said = [
            f"inspector: {base}/_mock/ui (each exchange with its findings; the journal: "
            f"{base}/_mock/requests)"
        ]
        guard = self.guard(self.runtime.settings, base, self.generated)
        return said + [text.strip() for text in guard]

    # -- verdicts -------------------------------------------------------------------------------

    def first(self) -> int | None:
        """The seq of the oldest entry still waiting for its verdict."""
        with self.lock:
            return next(iter(self.pending), None)

    def settle(self, seq: int, verdict: str, findings: list[tuple[str, str, str]]) -> None:
        with self.lock:
            proxied = self.pending.pop(seq, None)
        if proxied is not None:
            proxied.findings = tuple(
                {"rule": rule, "side": side, "message": message} for rule, side, message in findings
            )
            proxied.verdict = verdict  # last: the entry is final once its verdict is set

    def _verdicts(self) -> None:
        while True:
            try:
                seq, verdict, findings = self.reader.recv()
            except (EOFError, OSError):
                return
            self.settle(seq, verdict, findings)

    # -- an exchange, as the journal keeps it ---------------------------------------------------

    def entry(self, seen: Seen) -> Entry:
        parts = urlsplit(seen.url)
        below = path_below(seen.url, self.base_path) or "/"
        op, _ = self.router.match(seen.method, below, encoded=True)
        response_headers = _raw(seen.response_headers)
        encoding = _header(response_headers, b"content-encoding")
        response = _decoded(seen.response_body, encoding) if seen.response_whole else None
        request_body: Body
        if not seen.request_whole:  # longer than the proxy keeps: longer than the journal's bound
            request_body = _length(seen.request_headers, len(seen.request_body))
        elif op is None:  # the journal redacts an operation's own secret fields, and only those
            request_body = _bounded(redacted_body(seen.request_body, self.secrets))
        else:
            request_body = _bounded(seen.request_body)
        response_body: Body
        if response is None:
            response_body = _length(seen.response_headers, len(seen.response_body))
        else:
            response_body = _bounded(redacted_body(response, self.secrets))
        request_id = _header(response_headers, b"x-request-id")
        return Entry(
            request_id=request_id or _header(_raw(seen.request_headers), b"x-request-id") or "",
            method=seen.method,
            path=unquote(below),
            query=parts.query.encode("latin-1"),
            operation_id=op.operation_id if op is not None else None,
            status=seen.status,
            code=_code(response_body) if seen.status >= 400 else None,
            caller=None,  # who a key belongs to is the deployment's to know
            time=datetime.fromtimestamp(seen.started, UTC),
            duration_ms=round(seen.elapsed * 1000, 3),
            replayed=(_header(response_headers, b"idempotent-replayed") or "").lower() == "true",
            request_body=request_body,
            response_body=response_body,
            request_headers=_raw(seen.request_headers),
            response_headers=response_headers,
            proxied=Proxied(self.upstream, fallback=_fallback(seen)),
        )


class Front:
    """The ASGI application on the port: what :class:`ProxyPlane` serves, else the forwarder
    (lifespan included: it closes the upstream's connections)."""

    def __init__(self, plane: ProxyPlane, forwarder: Forwarder) -> None:
        self.plane = plane
        self.forwarder = forwarder

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            raw = scope.get("raw_path")
            path = raw.decode("latin-1") if raw else quote(scope["path"])
            path = path.split("?", 1)[0]
            if path.startswith("/_mock/") and self.plane.serves(scope["method"], path):
                await self.plane(scope, receive, send)
                return
        await self.forwarder(scope, receive, send)


def _fallback(seen: Seen) -> str | None:
    """Why the bundled mock answered this exchange (``--fallback-mock``), or None."""
    mark = seen.fallback
    return f"answered by the bundled mock ({mark.reason})" if mark and mark.answered else None


def _raw(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """Headers as the journal keeps them (ASGI's: lowercase names, bytes)."""
    return [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]


def _header(raw: list[tuple[bytes, bytes]], name: bytes) -> str | None:
    for key, value in raw:
        if key == name:
            return value.decode("latin-1")
    return None


def _bounded(body: bytes) -> Body:
    if not body:
        return None
    return len(body) if len(body) > BODY_LIMIT else body


def _length(headers: list[tuple[str, str]], kept: int) -> int:
    """The size of a body the proxy did not keep whole: its Content-Length, else what it kept
    (at least that)."""
    for key, value in headers:
        if key.lower() == "content-length" and value.strip().isdigit():
            return int(value)
    return kept


def _decoded(body: bytes, encoding: str | None) -> bytes:
    """A gzip or deflate answer decoded, when it fits the journal's bound; else as it came
    (the journal then says it is not JSON, and its size)."""
    coding = (encoding or "").strip().lower()
    if not body or coding not in ("gzip", "x-gzip", "deflate"):
        return body
    for wbits in (16 + zlib.MAX_WBITS,) if coding != "deflate" else (zlib.MAX_WBITS, -15):
        try:
            inflate = zlib.decompressobj(wbits)
            decoded = inflate.decompress(body, BODY_LIMIT + 1)
        except zlib.error:
            continue
        return decoded if len(decoded) <= BODY_LIMIT and inflate.eof else body
    return body


def _code(body: Body) -> str | None:
    """An error answer's ``code`` (the API's error envelope), when it has one."""
    if not isinstance(body, bytes):
        return None
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    code = value.get("code") if isinstance(value, dict) else None
    return code if isinstance(code, str) else None
