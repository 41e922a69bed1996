"""Cursor pages with the deprecated ``after``/``nextAfter`` beside them, and cursors bound to one
parent (a project's comments, a batch's variants).

- ``cursor``/``nextCursor`` page as every list does (``Call.page``).
- The deprecated ``after`` is the number of items already read; the response carries
  ``nextAfter`` (items read once this page is read) beside ``nextCursor``, null on the last
  page, whichever way the page was asked for.
- When both ``cursor`` and ``after`` are sent, the cursor wins (inferred, as on the video
  catalog): ``after`` is then ignored, and it is never part of what a cursor is bound to, so
  a client may keep sending it while it moves to cursors.
- A cursor is bound to its list's path (a project's comments, a batch's variants): the
  platform's cursors include path parameters, so another parent's cursor is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from mockserver.call import Call
from mockserver.platform.envelope import public
from mockserver.world import Query

Records = Query | Sequence[dict[str, Any]]


def seq_after(records: Records, count: int) -> int:
    """The position after the first ``count`` records (all of them when fewer; 0 for none)."""
    if isinstance(records, Query):
        return records.seq_of(count)
    read = min(count, len(records))
    seq: int = records[read - 1]["_seq"] if read else 0
    return seq


def count_through(records: Records, record: dict[str, Any]) -> int:
    """How many records are read once ``record`` (one of them) is."""
    if isinstance(records, Query):
        return records.count_through(record["_seq"])
    index = {item["id"]: n for n, item in enumerate(records, 1)}
    return index[record["id"]]


def page_with_after(
    call: Call,
    items: str,
    records: Records,
    *,
    view: Callable[[dict[str, Any]], dict[str, Any]] = public,
) -> dict[str, Any]:
    """A cursor page of ``records`` plus ``nextAfter``: a collection's (a Query: positions by
    bisection), or a sequence in order, each with ``_seq`` (positions by counting)."""
    query = {name: value for name, value in call.query.items() if name != "after"}
    paged = replace(call, query=query)
    after_seq = None
    if "cursor" not in call.query and "after" in call.query:
        after_seq = seq_after(records, call.query["after"])
    shown: list[dict[str, Any]] = []

    def view_last(record: dict[str, Any]) -> dict[str, Any]:
        shown[:] = [record]
        return view(record)

    body = paged.page(items, records, view=view_last, after_seq=after_seq)
    next_after = None
    if body["nextCursor"] is not None and shown:
        next_after = count_through(records, shown[0])
    body["nextAfter"] = next_after
    return body
