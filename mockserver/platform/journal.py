"""The request journal: a bounded record of what the mock answered, newest last.

Recording is cheap (the hot path keeps references to what it already holds: the bytes of both
bodies, the request's and the response's header lists, the caller); an entry is rendered only
when the journal is read: bodies parsed, the request's secret fields redacted (the operation's
``x-secret`` marks, platform/validation.py), the query split, the headers written out with
every credential redacted (``Authorization`` shows the key's label, never the key). A body over
``BODY_LIMIT`` bytes is kept as its size.

Whatever a client sent, the journal can always be read: a body is shown only as the API's own
reader (platform/jsonbody.py, under the contract's limits) would take it, so what it shows is
JSON any encoder writes. Anything else is shown as ``{"omitted": why, "bytes": N}``: not JSON
(not UTF-8, binary), sent with a ``Content-Encoding`` (refused unread), nested deeper than
``maxJsonNestingDepth``, holding an unpaired surrogate or a number out of range, or over
``BODY_LIMIT``. Parsing is iterative or bounded (the reader's), never unbounded recursion.
Such a body is never previewed: a request body that could not be parsed could hold a secret
no redaction found.

Each entry has a running number (``seq``, from 1, never reused in the journal's life, not even
after a reset clears it), so a reader can ask only for what it has not seen (``after``).

With a shared store (PostgreSQL: many workers), :class:`SharedJournal` keeps the entries in
the store instead, so that every worker reads every worker's requests: ``seq`` is then the
store's own number, given when the row is written (in the order the requests were answered,
across every process and world), and each read shows the newest ``JOURNAL_SIZE`` of the world.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import orjson

from mockserver.platform.auth import Caller
from mockserver.platform.envelope import iso_z
from mockserver.platform.errors import ApiError
from mockserver.platform.jsonbody import JsonReader, unread_encoding
from mockserver.store.base import JournalRow, StoreError

if TYPE_CHECKING:
    from mockserver.store.sql import SqlWorld

log = logging.getLogger("mockserver")
JOURNAL_SIZE = 1000
BODY_LIMIT = 64 * 1024
RawHeaders = list[tuple[bytes, bytes]]  # as ASGI and Starlette hold them: lowercase names
# Headers whose values are credentials: never shown (Authorization shows the key's label).
CREDENTIAL_HEADER = re.compile(r"authorization|cookie|secret|token|password|api-?key")
BEARER = re.compile(r"Bearer ([A-Za-z0-9._~+/=-]{1,512})")
REDACTED = "[redacted]"


@dataclass(slots=True)
class Entry:
    request_id: str
    method: str
    path: str
    query: bytes
    operation_id: str | None
    status: int
    code: str | None
    caller: Caller | None  # who the key resolved to; None when it did not (or none was sent)
    time: datetime  # on the runtime's clock; written out when the journal is read
    duration_ms: float
    replayed: bool
    request_body: Body
    response_body: Body
    request_headers: RawHeaders
    response_headers: RawHeaders
    seq: int = 0  # given by Journal.record
    proxied: Proxied | None = None  # an exchange ``mockserver proxy`` forwarded (else None)


@dataclass(slots=True)
class Proxied:
    """What an entry of ``mockserver proxy`` adds: the deployment the exchange was forwarded
    to, and the judge's verdict on it, which arrives after the entry is recorded (judging runs
    in a process of its own): ``pending`` until then; ``judged`` with its ``findings`` (each
    ``{"rule", "side", "message"}``); ``outside`` (below no path of the contract: forwarded,
    not judged); ``dropped`` (the judge fell behind: forwarded, not judged). ``fallback``: the
    upstream lacked the operation and the bundled mock answered (``--fallback-mock``)."""

    upstream: str
    verdict: str = "pending"
    findings: tuple[dict[str, str], ...] = ()
    fallback: str | None = None  # --fallback-mock: why the bundled mock answered in its stead

    def view(self) -> dict[str, Any]:
        return {
            "upstream": self.upstream,
            "verdict": self.verdict,
            "findings": list(self.findings),
            "fallback": self.fallback,
        }


Redactor = Callable[[str, Any], Any]  # (operationId, parsed body) -> the body, secrets redacted
Body = bytes | int | None  # the bytes, their size when over BODY_LIMIT, or None when none


@dataclass(frozen=True, slots=True)
class Filters:
    """What a reader asks for; every filter given must hold (None: any)."""

    operation_id: str | None = None
    status: int | None = None
    status_class: int | None = None  # the hundreds digit: 4 for 4xx
    code: str | None = None
    key_id: str | None = None
    workspace: str | None = None  # a workspace's slug
    member: str | None = None
    after: int = 0  # only entries with a greater seq
    findings: str | None = None  # any, client or deployment: a proxied entry with such findings

    def admit(self, e: Entry) -> bool:
        caller = e.caller
        return (
            e.seq > self.after
            and (self.findings is None or _found(e, self.findings))
            and self.operation_id in (None, e.operation_id)
            and self.status in (None, e.status)
            and self.status_class in (None, e.status // 100)
            and self.code in (None, e.code)
            and self.key_id in (None, caller.key_id if caller else None)
            and self.workspace in (None, caller.workspace_slug if caller else None)
            and self.member in (None, caller.member if caller else None)
        )


def _found(e: Entry, side: str) -> bool:
    """Whether a proxied entry's verdict holds a finding of ``side`` (``any``: of either)."""
    proxied = e.proxied
    if proxied is None:
        return False
    return any(side in ("any", f["side"]) for f in proxied.findings)


def kept(raw: bytes | None) -> Body:
    """What the journal keeps of a body: the bytes, or only their size when too large."""
    return len(raw) if raw is not None and len(raw) > BODY_LIMIT else raw


def shown_body(body: Body, reader: JsonReader, *, own: bool = False) -> Any:
    """A kept body as the journal shows it: the JSON, None when none was sent, or
    ``{"omitted": why, "bytes": N}`` for what cannot be shown as it is (never raises).
    ``own``: the mock's own answer, JSON it wrote, read back by orjson (~4x quicker than the
    reader's checks on a 30 KB list answer), the reader only if that fails."""
    if isinstance(body, int):
        return {"omitted": f"over {BODY_LIMIT} bytes", "bytes": body}
    if body is None or not body.strip():
        return None
    if own:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    try:
        return reader.parse(body)
    except ApiError as refusal:
        reason = (refusal.details or {}).get("reason")
        why = {
            "nesting_too_deep": f"nested deeper than {reader.max_depth} levels",
            "lone_surrogate": "holds an unpaired UTF-16 surrogate",
            "number_out_of_range": "holds a number out of range",
        }
        return {"omitted": why.get(reason, "not JSON"), "bytes": len(body)}


def _content_encoding(raw: RawHeaders) -> str | None:
    """The request's ``Content-Encoding`` when the mock does not read it (None when none)."""
    for name, value in raw:
        if name.lower() == b"content-encoding":
            return unread_encoding(value.decode("latin-1"))
    return None


def render_headers(raw: RawHeaders, label: Callable[[str], str]) -> dict[str, str]:
    """Headers by lowercase name (repeated ones joined with ``, ``), credentials redacted:
    ``Authorization: Bearer <key>`` becomes ``Bearer <label>`` (``label`` of the key)."""
    shown: dict[str, str] = {}
    for name_bytes, value_bytes in raw:
        name = name_bytes.decode("latin-1").lower()
        value = value_bytes.decode("latin-1")
        if CREDENTIAL_HEADER.search(name):
            bearer = BEARER.fullmatch(value) if name == "authorization" else None
            value = f"Bearer {label(bearer.group(1))}" if bearer else REDACTED
        shown[name] = f"{shown[name]}, {value}" if name in shown else value
    return shown


class Journal:
    def __init__(self, reader: JsonReader, size: int = JOURNAL_SIZE) -> None:
        self._reader = reader  # how bodies are read for showing (the API's limits)
        self._entries: deque[Entry] = deque(maxlen=size)
        self._seq = 0

    async def written(self) -> None:
        """Wait until what was recorded can be read by every process (at once, here)."""

    def record(self, entry: Entry) -> None:
        self._seq += 1
        entry.seq = self._seq
        self._entries.append(entry)

    @property
    def latest_seq(self) -> int:
        """The number of the last entry ever recorded (0 before the first)."""
        return self._seq

    @property
    def oldest_seq(self) -> int:
        """The number of the oldest entry kept (one past :attr:`latest_seq` when none is)."""
        return self._entries[0].seq if self._entries else self._seq + 1

    def unsettled_seq(self) -> int | None:
        """The number of the oldest entry whose view may still change (None: every entry is
        final). The mock's own entries are final when recorded; ``mockserver proxy``'s stay
        open until the judge's verdict arrives (and, with it, their findings)."""
        return None

    def chosen(self, filters: Filters, limit: int = JOURNAL_SIZE) -> list[Entry]:
        """The newest ``limit`` entries that pass ``filters``, oldest first."""
        return [e for e in self._entries if filters.admit(e)][-limit:]

    def entries(
        self,
        redact: Redactor,
        label: Callable[[str], str],
        filters: Filters | None = None,
        limit: int = JOURNAL_SIZE,
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` entries that pass ``filters``, oldest first, rendered
        (``label`` names a key by its non-secret label)."""
        return [self._render(e, redact, label) for e in self.chosen(filters or Filters(), limit)]

    def _render(
        self, entry: Entry, redact: Redactor, label: Callable[[str], str]
    ) -> dict[str, Any]:
        encoding = _content_encoding(entry.request_headers)
        if encoding and isinstance(entry.request_body, bytes) and entry.request_body:
            # refused unread (platform/jsonbody.py): the bytes are not the JSON they encode
            shown = f"sent with Content-Encoding: {encoding}"
            request_body: Any = {"omitted": shown, "bytes": len(entry.request_body)}
        else:
            request_body = shown_body(entry.request_body, self._reader)
        if entry.operation_id is not None and request_body is not None:
            request_body = redact(entry.operation_id, request_body)
        caller = entry.caller
        response_headers = render_headers(entry.response_headers, label)
        return {
            "seq": entry.seq,
            "requestId": entry.request_id,
            "method": entry.method,
            "path": entry.path,
            "query": parse_qs(entry.query.decode("latin-1"), keep_blank_values=True),
            "operationId": entry.operation_id,
            "status": entry.status,
            "code": entry.code,
            "keyId": caller.key_id if caller else None,
            "workspace": caller.workspace_slug if caller else None,
            "member": caller.member if caller else None,
            "role": caller.role if caller else None,
            "time": iso_z(entry.time),
            "durationMs": entry.duration_ms,
            "replayed": entry.replayed,
            # Answered as its Prefer header asked (platform/prefer.py), not worked out.
            "preferred": response_headers.get("preference-applied"),
            "requestHeaders": render_headers(entry.request_headers, label),
            "responseHeaders": response_headers,
            "requestBody": request_body,
            "responseBody": shown_body(entry.response_body, self._reader, own=True),
            "proxied": None if entry.proxied is None else entry.proxied.view(),
        }

    def clear(self) -> None:
        """Forget every entry (the running number goes on)."""
        self._entries.clear()


TRIM_EVERY = 100  # a process forgets the entries past the bound once in this many writes


def _headers_out(raw: RawHeaders) -> list[list[str]]:
    return [[name.decode("latin-1"), value.decode("latin-1")] for name, value in raw]


def _headers_in(kept: list[list[str]]) -> RawHeaders:
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in kept]


def _meta(entry: Entry) -> str:
    """What a row keeps of an entry besides the bodies' bytes, as JSON text."""
    caller = entry.caller
    return orjson.dumps(
        [
            entry.request_id, entry.method, entry.path, entry.query.decode("latin-1"),
            entry.operation_id, entry.status, entry.code,
            None if caller is None else [caller.workspace_id, caller.workspace_slug,
                                         caller.member, caller.role, caller.key_id],
            entry.time.isoformat(), entry.duration_ms, entry.replayed,
            entry.request_body if isinstance(entry.request_body, int) else None,
            entry.response_body if isinstance(entry.response_body, int) else None,
            _headers_out(entry.request_headers), _headers_out(entry.response_headers),
        ]
    ).decode()  # fmt: skip


def _entry(seq: int, meta: str, request_body: bytes | None, response_body: bytes | None) -> Entry:
    (request_id, method, path, query, operation_id, status, code, caller, time, duration_ms,
     replayed, request_size, response_size, request_headers, response_headers) = (
        orjson.loads(meta))  # fmt: skip
    return Entry(
        request_id=request_id,
        method=method,
        path=path,
        query=query.encode("latin-1"),
        operation_id=operation_id,
        status=status,
        code=code,
        caller=None if caller is None else Caller(*caller),
        time=datetime.fromisoformat(time),
        duration_ms=duration_ms,
        replayed=replayed,
        request_body=request_size if request_size is not None else _bytes(request_body),
        response_body=response_size if response_size is not None else _bytes(response_body),
        request_headers=_headers_in(request_headers),
        response_headers=_headers_in(response_headers),
        seq=seq,
    )


def _bytes(body: bytes | memoryview | None) -> bytes | None:
    return None if body is None else bytes(body)


class SharedJournal(Journal):
    """The journal of a world in a shared store: every worker writes its requests there and
    reads every worker's.

    The requests a process answers in one turn of its event loop are written by one INSERT
    (its own transaction: no wait for the disk, since the connection commits asynchronously
    and the table is UNLOGGED; a journal is a record, not state), made after their answers
    are complete and before they are sent (:meth:`written`), so ``seq`` follows the order the
    requests were answered and a reader on any worker finds a request once its answer has
    arrived. That INSERT is part of the turn's one round trip to the store (``send``:
    store/replica.py), with the catch-up of the requests that arrived in the turn, so a
    request costs less than a statement of its own. It is not folded into the request's own
    write: most requests write nothing, and a write retried after a conflict would journal
    twice. The bound is kept on reading (the newest ``size`` rows of the world, one indexed
    scan), and the rows past it are deleted once every ``TRIM_EVERY`` turns that journalled
    (~0.65 ms each), so the table holds at most about ``size`` + ``TRIM_EVERY`` x workers rows
    a world. Rendering is :class:`Journal`'s, on the entries read back.

    Rows that cannot be written (the database is down) are lost, and logged: the answers
    stand.
    """

    def __init__(
        self,
        reader: JsonReader,
        store: SqlWorld,
        send: Callable[[JournalRow], asyncio.Future[None]],
        size: int = JOURNAL_SIZE,
    ) -> None:
        super().__init__(reader, size)
        self._store = store
        self._send = send
        self._size = size
        self._writes = 0
        self._sent: asyncio.Future[None] | None = None  # the round trip carrying the last row

    def record(self, entry: Entry) -> None:
        request_body = entry.request_body if isinstance(entry.request_body, bytes) else None
        response_body = entry.response_body if isinstance(entry.response_body, bytes) else None
        sent = self._send((_meta(entry), request_body, response_body))
        if sent is not self._sent:  # the first row of a round trip
            self._sent = sent
            sent.add_done_callback(self._trim)

    async def written(self) -> None:
        if self._sent is not None:
            # shield: a request that goes away does not cancel the others' write.
            await asyncio.shield(self._sent)

    def _trim(self, _sent: asyncio.Future[None]) -> None:
        self._writes += 1
        if self._writes % TRIM_EVERY:
            return
        try:
            self._store.journal_trim(self._size)
        except StoreError as error:
            log.error("the journal's old entries not trimmed: %s", error)

    @property
    def latest_seq(self) -> int:
        return self._store.journal_bounds(self._size)[0]

    @property
    def oldest_seq(self) -> int:
        latest, oldest = self._store.journal_bounds(self._size)
        return latest + 1 if oldest is None else oldest

    def chosen(self, filters: Filters, limit: int = JOURNAL_SIZE) -> list[Entry]:
        rows = self._store.journal_rows(filters.after, self._size)
        return [e for e in (_entry(*row) for row in rows) if filters.admit(e)][-limit:]

    def clear(self) -> None:
        self._store.journal_clear()
