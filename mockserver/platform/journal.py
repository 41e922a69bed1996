"""The request journal: a bounded record of what the mock answered, newest last.

Recording is cheap (the hot path keeps references to the bytes already in hand); an entry is
rendered only when the journal is read: bodies parsed, the request's secret fields redacted
(the operation's ``x-secret`` marks, platform/validation.py), the query split. A body over
``BODY_LIMIT`` bytes is kept as its size; a request body that is not JSON is never shown (it
could hold a secret no parser found).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import parse_qs

from mockserver.platform.envelope import iso_z

JOURNAL_SIZE = 1000
BODY_LIMIT = 64 * 1024


@dataclass(slots=True)
class Entry:
    request_id: str
    method: str
    path: str
    query: bytes
    operation_id: str | None
    status: int
    code: str | None
    key_id: str | None
    time: datetime  # on the runtime's clock; written out when the journal is read
    duration_ms: float
    replayed: bool
    request_body: Body
    response_body: Body


Redactor = Callable[[str, Any], Any]  # (operationId, parsed body) -> the body, secrets redacted
Body = bytes | int | None  # the bytes, their size when over BODY_LIMIT, or None when none


def kept(raw: bytes | None) -> Body:
    """What the journal keeps of a body: the bytes, or only their size when too large."""
    return len(raw) if raw is not None and len(raw) > BODY_LIMIT else raw


def _render_body(body: Body) -> Any:
    if isinstance(body, int):
        return {"omitted": f"over {BODY_LIMIT} bytes", "bytes": body}
    if body is None or not body.strip():
        return None
    try:
        return json.loads(body)
    except ValueError:
        return {"omitted": "not JSON", "bytes": len(body)}


class Journal:
    def __init__(self, size: int = JOURNAL_SIZE) -> None:
        self._entries: deque[Entry] = deque(maxlen=size)

    def record(self, entry: Entry) -> None:
        self._entries.append(entry)

    def entries(
        self,
        redact: Redactor,
        *,
        operation_id: str | None = None,
        status: int | None = None,
        code: str | None = None,
        key_id: str | None = None,
        limit: int = JOURNAL_SIZE,
    ) -> list[dict[str, Any]]:
        """The newest ``limit`` entries that pass every filter given, oldest first."""
        chosen = [
            e
            for e in self._entries
            if operation_id in (None, e.operation_id)
            and status in (None, e.status)
            and code in (None, e.code)
            and key_id in (None, e.key_id)
        ]
        return [self._render(e, redact) for e in chosen[-limit:]]

    def _render(self, entry: Entry, redact: Redactor) -> dict[str, Any]:
        request_body = _render_body(entry.request_body)
        if entry.operation_id is not None and request_body is not None:
            request_body = redact(entry.operation_id, request_body)
        return {
            "requestId": entry.request_id,
            "method": entry.method,
            "path": entry.path,
            "query": parse_qs(entry.query.decode("latin-1"), keep_blank_values=True),
            "operationId": entry.operation_id,
            "status": entry.status,
            "code": entry.code,
            "keyId": entry.key_id,
            "time": iso_z(entry.time),
            "durationMs": entry.duration_ms,
            "replayed": entry.replayed,
            "requestBody": request_body,
            "responseBody": _render_body(entry.response_body),
        }

    def clear(self) -> None:
        self._entries.clear()
