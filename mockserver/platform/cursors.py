"""Opaque, signed, query-bound, short-lived cursors, and keyset paging over them.

A cursor is ``c1.<payload>.<mac>``: the payload (base64url JSON) names the list it pages, a hash
of the filters that produced it, the position (the insertion sequence of the last record read)
and when it was issued; the MAC (HMAC-SHA256, truncated) makes it tamper-evident. A cursor sent
to another list, with other filters, after its lifetime (``x-limits.cursorLifetimeSeconds`` on
the mock clock, inferred), or altered in any way answers ``400 invalid_request``.

Paging is by position, not offset: records created between pages neither repeat nor vanish
from a walk, because each record's sequence never changes and new records sort last.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from mockserver.platform.clock import Clock
from mockserver.platform.errors import invalid_request

VERSION = "c1"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def filters_hash(filters: dict[str, Any]) -> str:
    canonical = json.dumps(filters, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Position:
    seq: int
    issued_at: float


def decode_payload(payload: str) -> dict[str, Any]:
    """A cursor's body from its payload; ValueError when it is not one."""
    body = json.loads(_unb64(payload))
    if not isinstance(body, dict) or not {"s", "f", "p", "t"} <= set(body):
        raise ValueError("not a cursor")
    return body


def open_cursor(codec: CursorCodec, token: str, scope: str, filters: dict[str, Any]) -> Position:
    """The position a cursor carries, or ``400 invalid_request`` if it is unusable: malformed,
    altered, of another list, issued for other filters, or expired."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != VERSION:
        raise invalid_request(
            "unusable cursor: list again from the first page", reason="cursor_invalid"
        )
    _, payload, mac = parts
    if not hmac.compare_digest(mac.encode(), codec.mac(payload).encode()):
        raise invalid_request(
            "unusable cursor: it was altered; list again from the first page",
            reason="cursor_invalid",
        )
    try:
        body = decode_payload(payload)
    except ValueError:
        raise invalid_request("unusable cursor", reason="cursor_invalid") from None
    if body["s"] != scope:
        raise invalid_request("this cursor belongs to another list", reason="cursor_invalid")
    if body["f"] != filters_hash(filters):
        raise invalid_request(
            "this cursor was issued for other filters; keep the filters unchanged while "
            "paging, or list again from the first page",
            reason="cursor_query_mismatch",
        )
    if codec.clock.timestamp() > body["t"] + codec.lifetime:
        raise invalid_request(
            "this cursor expired; list again from the first page", reason="cursor_expired"
        )
    return Position(seq=int(body["p"]), issued_at=float(body["t"]))


OpenCursor = Callable[["CursorCodec", str, str, dict[str, Any]], Position]


class CursorCodec:
    """Issues cursors, and opens them with ``open_cursor`` (the runtime's seam)."""

    def __init__(
        self,
        clock: Clock,
        lifetime: int,
        key: bytes | None = None,
        *,
        open_cursor: OpenCursor = open_cursor,
    ) -> None:
        self.clock = clock
        self.lifetime = lifetime
        self._key = key or secrets.token_bytes(32)
        self._open = open_cursor

    def mac(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest()[:18])

    def seal(self, body: dict[str, Any]) -> str:
        """The signed cursor carrying ``body``."""
        payload = _b64(json.dumps(body, separators=(",", ":")).encode())
        return f"{VERSION}.{payload}.{self.mac(payload)}"

    def issue(self, scope: str, filters: dict[str, Any], seq: int) -> str:
        return self.seal(
            {"s": scope, "f": filters_hash(filters), "p": seq, "t": int(self.clock.timestamp())}
        )

    def open(self, token: str, scope: str, filters: dict[str, Any]) -> Position:
        """The position a cursor carries, or ``400 invalid_request`` if it is unusable."""
        return self._open(self, token, scope, filters)


@dataclass
class Page:
    records: list[dict[str, Any]]  # visible records of the page
    last_seq: int | None  # sequence of the last record read (visible or not)
    more: bool


def read_page(
    records: Iterable[dict[str, Any]],
    *,
    after_seq: int,
    limit: int,
    visible: Callable[[dict[str, Any]], bool] | None = None,
) -> Page:
    """Read ``limit`` records after a position, then filter by visibility.

    ``records`` are in ``_seq`` order; those at or before the position are skipped (a source
    that starts at the position, ``World.after``, has none to skip). Visibility is applied
    after reading, as the service does, so a page may be empty while more records follow.
    """
    read: list[dict[str, Any]] = []
    more = False
    for record in records:
        if record["_seq"] <= after_seq:
            continue
        if len(read) == limit:
            more = True
            break
        read.append(record)
    shown = [r for r in read if visible is None or visible(r)]
    return Page(shown, read[-1]["_seq"] if read else None, more)


def next_page(page: Page, issue: Callable[[int], str]) -> tuple[str | None, bool]:
    """A page's ``nextCursor`` and ``hasMore``: a cursor after the last record read (``issue``
    makes it from that record's sequence) when more follow; else ``null`` and false."""
    if page.more and page.last_seq is not None:
        return issue(page.last_seq), True
    return None, False


def stream_next_after(events: list[dict[str, Any]], after: int) -> int:
    """An ordered stream's ``nextAfter``: the sequence of the last event of the page, or
    ``after`` itself for an empty page (it never goes backwards)."""
    return int(events[-1]["sequence"]) if events else after
