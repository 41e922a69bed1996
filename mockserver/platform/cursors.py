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


class CursorCodec:
    def __init__(
        self,
        clock: Clock,
        lifetime: int,
        key: bytes | None = None,
        defects: frozenset[str] = frozenset(),
    ) -> None:
        self.defects = defects  # test-only (mockserver/defects.py)
        self.clock = clock
        self.lifetime = lifetime
        self._key = key or secrets.token_bytes(32)

    def _mac(self, payload: str) -> str:
        return _b64(hmac.new(self._key, payload.encode(), hashlib.sha256).digest()[:18])

    def issue(self, scope: str, filters: dict[str, Any], seq: int) -> str:
        body = {"s": scope, "f": filters_hash(filters), "p": seq, "t": int(self.clock.timestamp())}
        payload = _b64(json.dumps(body, separators=(",", ":")).encode())
        return f"{VERSION}.{payload}.{self._mac(payload)}"

    def open(self, token: str, scope: str, filters: dict[str, Any]) -> Position:
        """The position a cursor carries, or ``400 invalid_request`` if it is unusable."""
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != VERSION:
            raise invalid_request(
                "unusable cursor: list again from the first page", reason="cursor_invalid"
            )
        _, payload, mac = parts
        tamper_ok = "tampered-cursor-accepted" in self.defects  # defect:
        if not tamper_ok and not hmac.compare_digest(mac.encode(), self._mac(payload).encode()):
            raise invalid_request(
                "unusable cursor: it was altered; list again from the first page",
                reason="cursor_invalid",
            )
        try:
            body = json.loads(_unb64(payload))
            if not isinstance(body, dict) or not {"s", "f", "p", "t"} <= set(body):
                raise ValueError("not a cursor")
        except ValueError:
            if tamper_ok:  # defect: an unreadable cursor starts over instead of a 400
                return Position(seq=0, issued_at=self.clock.timestamp())
            raise invalid_request("unusable cursor", reason="cursor_invalid") from None
        if body["s"] != scope:
            raise invalid_request("this cursor belongs to another list", reason="cursor_invalid")
        if body["f"] != filters_hash(filters) and "unbound-cursors" not in self.defects:
            raise invalid_request(
                "this cursor was issued for other filters; keep the filters unchanged while "
                "paging, or list again from the first page",
                reason="cursor_query_mismatch",
            )
        if self.clock.timestamp() > body["t"] + self.lifetime:
            raise invalid_request(
                "this cursor expired; list again from the first page", reason="cursor_expired"
            )
        return Position(seq=int(body["p"]), issued_at=float(body["t"]))


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

    Visibility is applied after reading, as the service does, so a page may be empty while
    more records follow.
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
