"""Defects of paging: cursor pages (``next_page``), cursors (``open_cursor``) and ordered streams
(``stream_next_after``)."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from mockserver.platform.cursors import (
    VERSION,
    CursorCodec,
    Page,
    Position,
    decode_payload,
    filters_hash,
)
from mockserver.seams import Seams
from tests.defects.defect import Defect

Issue = Callable[[int], str]


def _empty_next_cursor(seams: Seams) -> Seams:
    previous = seams.next_page

    def next_page(page: Page, issue: Issue) -> tuple[str | None, bool]:
        cursor, more = previous(page, issue)
        return ("" if cursor is None else cursor), more

    return replace(seams, next_page=next_page)


def _repeat_item_across_pages(seams: Seams) -> Seams:
    previous = seams.next_page

    def next_page(page: Page, issue: Issue) -> tuple[str | None, bool]:
        if not page.records:
            return previous(page, issue)
        return previous(page, lambda _seq: issue(page.records[-1]["_seq"] - 1))

    return replace(seams, next_page=next_page)


def _has_more_disagrees(seams: Seams) -> Seams:
    previous = seams.next_page

    def next_page(page: Page, issue: Issue) -> tuple[str | None, bool]:
        cursor, _ = previous(page, issue)
        return cursor, True

    return replace(seams, next_page=next_page)


def _parts(token: str) -> tuple[str, dict[str, Any]] | None:
    """A cursor's mac and body, unverified; None when it is not readable as one."""
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != VERSION:
        return None
    try:
        return parts[2], decode_payload(parts[1])
    except ValueError:
        return None


def _authentic(codec: CursorCodec, token: str) -> bool:
    _, payload, mac = token.split(".")
    return hmac.compare_digest(mac.encode(), codec.mac(payload).encode())


def _tampered_cursor_accepted(seams: Seams) -> Seams:
    previous = seams.open_cursor

    def open_cursor(
        codec: CursorCodec, token: str, scope: str, filters: dict[str, Any]
    ) -> Position:
        read = _parts(token)
        if read is None:  # unreadable: start over instead of a 400
            return Position(seq=0, issued_at=codec.clock.timestamp())
        return previous(codec, codec.seal(read[1]), scope, filters)  # altered: signed anew

    return replace(seams, open_cursor=open_cursor)


def _unbound_cursors(seams: Seams) -> Seams:
    previous = seams.open_cursor

    def open_cursor(
        codec: CursorCodec, token: str, scope: str, filters: dict[str, Any]
    ) -> Position:
        read = _parts(token)
        if read is not None and _authentic(codec, token):  # bound anew to the filters sent
            token = codec.seal({**read[1], "f": filters_hash(filters)})
        return previous(codec, token, scope, filters)

    return replace(seams, open_cursor=open_cursor)


def _stream_goes_backwards(seams: Seams) -> Seams:
    previous = seams.stream_next_after

    def next_after(events: list[dict[str, Any]], after: int) -> int:
        return after - 1 if after else previous(events, after)

    return replace(seams, stream_next_after=next_after)


DEFECTS: dict[str, Defect] = {
    "empty-next-cursor": Defect("nextCursor is null on the last page", _empty_next_cursor),
    "repeat-item-across-pages": Defect("a walk sees each item once", _repeat_item_across_pages),
    "has-more-disagrees": Defect(
        "hasMore is true exactly when nextCursor is not null", _has_more_disagrees
    ),
    "unbound-cursors": Defect(
        "cursors are bound to the query that produced them", _unbound_cursors
    ),
    "tampered-cursor-accepted": Defect(
        "an altered cursor answers 400 invalid_request", _tampered_cursor_accepted
    ),
    "stream-goes-backwards": Defect(
        "an ordered stream's nextAfter never goes backwards", _stream_goes_backwards
    ),
}
