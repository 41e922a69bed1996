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


def page_with_after(
    call: Call,
    items: str,
    records: Sequence[dict[str, Any]],
    *,
    view: Callable[[dict[str, Any]], dict[str, Any]] = public,
) -> dict[str, Any]:
    """A cursor page of ``records`` (in order, each with ``_seq``) plus ``nextAfter``."""
    query = {name: value for name, value in call.query.items() if name != "after"}
    paged = replace(call, query=query)
    after_seq = None
    if "cursor" not in call.query and "after" in call.query:
        read = min(call.query["after"], len(records))
        after_seq = records[read - 1]["_seq"] if read else 0
    body = paged.page(items, records, view=view, after_seq=after_seq)
    next_after = None
    if body["nextCursor"] is not None and body[items]:
        index = {record["id"]: n for n, record in enumerate(records, 1)}
        next_after = index[body[items][-1]["id"]]
    body["nextAfter"] = next_after
    return body
