"""Scored viral content: theme assignments with provenance, economics, and a stable ranked walk.

Rules (inferred: the interface document shows no fields of a viral-content item):

- An item (collection ``viralContent``) has ``title``, ``description``, ``hashtags``,
  ``sourceCategories``, ``url``, ``platform``, ``channelId``, ``runId``, ``score`` (0 to 100),
  ``views`` and ``collectedAt``. Its ``themeAssignments`` are the classifier's answer for those
  fields (``themes/assign.py``: the result first, then up to two alternatives, each with its
  method, confidence, provenance and taxonomy version); items collected by runs are classified
  when collected, fixture items on first read (the same answer either way).
- ``economics`` are the priors of the item's top canonical theme: the first assignment that is
  not the needs-review fallback, named in ``economicsThemeId``. An item with no canonical
  assignment at all carries the taxonomy's median priors and ``economicsThemeId`` null.
- ``GET /v1/viral-content`` lists highest score first. ``minScore`` keeps items scoring at least
  that much; ``themeId`` keeps items whose top assignment is that theme (a canonical theme, or
  ``needs-review`` for the items that fell back; any other id answers ``400 invalid_request``).
- Paging a ranked list by insertion position would skip or repeat items, so a walk is ranked
  once: the first page fixes its *horizon*, the last insertion sequence that existed. The items
  inside the horizon are ordered by score, descending, ties oldest first; items collected after
  the horizon follow at the end of the walk, oldest first. Scores never change, so every cursor
  (which carries the horizon and the last item read, signed and bound to the filters) resumes
  exactly where the previous page stopped: an item that existed when the walk began is seen
  exactly once, in score order, and one collected during the walk is seen once, at its end.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterator
from functools import cache
from itertools import islice
from typing import Any

from mockserver.areas.discovery.state import VIRAL
from mockserver.areas.themes.assign import theme_assignments
from mockserver.areas.themes.refs import check_theme_ids
from mockserver.areas.themes.taxonomy import ECONOMICS_FIELDS, Taxonomy, economics_view
from mockserver.call import Call
from mockserver.platform.envelope import public
from mockserver.platform.errors import invalid_request, not_found
from mockserver.world import World

POSITION_SPAN = 2**40  # a cursor position packs (horizon, last sequence read)


@cache
def median_economics(taxonomy: Taxonomy) -> dict[str, Any]:
    """The taxonomy's median priors: the economics of content no theme could be given."""
    themes = taxonomy.theme_list
    values: dict[str, Any] = {
        field: round(statistics.median(t["economics"][field] for t in themes), 4)
        for field in ECONOMICS_FIELDS
        if field != "competition"
    }
    counts = Counter(t["economics"]["competition"] for t in themes)
    values["competition"] = max(sorted(counts), key=lambda level: counts[level])
    return {field: values[field] for field in ECONOMICS_FIELDS}


def assess(item: dict[str, Any], taxonomy: Taxonomy) -> dict[str, Any]:
    """Give an item its theme assignments and economics, once (deterministic)."""
    if "themeAssignments" not in item:
        assignments = theme_assignments(item, taxonomy)
        top = next(
            (a["themeId"] for a in assignments if a["themeId"] != taxonomy.fallback["id"]), None
        )
        theme = taxonomy.theme(top) if top else None
        item["themeAssignments"] = assignments
        item["economicsThemeId"] = top
        item["economics"] = economics_view(theme) if theme else dict(median_economics(taxonomy))
    return item


def get(call: Call, content_id: str, taxonomy: Taxonomy) -> dict[str, Any]:
    item = call.world.get(call.workspace_id, VIRAL, content_id)
    if item is None:
        raise not_found(f"viral-content item {content_id!r}")
    return assess(item, taxonomy)


def view(item: dict[str, Any]) -> dict[str, Any]:
    return public(item)


def walk(
    world: World, workspace_id: str, horizon: int, after: dict[str, Any] | None
) -> Iterator[dict[str, Any]]:
    """A walk's items after the item ``after`` (from its start when None): those inside the
    horizon by score (the world's ranking, kept as items are collected), then the later ones
    by sequence. Both start by bisection, so a deep page costs what the first costs."""
    if after is None or after["_seq"] <= horizon:
        for item in world.ranked(workspace_id, VIRAL, "score", after):
            if item["_seq"] <= horizon:
                yield item
    later = horizon if after is None else max(horizon, after["_seq"])
    yield from world.after(workspace_id, VIRAL, later)


def page(call: Call, taxonomy: Taxonomy) -> dict[str, Any]:
    """A page of ``GET /v1/viral-content`` (see the module docstring for the order)."""
    query = call.query
    theme_id, min_score = query.get("themeId"), query.get("minScore")
    if theme_id is not None:
        check_theme_ids([("/themeId", theme_id)], location="query", allow_fallback=True)
    filters = {k: v for k, v in query.items() if k not in ("cursor", "limit")}
    scope = call.operation.operation_id
    cursors = call.runtime.cursors
    if "cursor" in query:
        horizon, last = divmod(cursors.open(query["cursor"], scope, filters).seq, POSITION_SPAN)
    else:
        horizon, last = call.world.last_seq(), None

    def kept(item: dict[str, Any]) -> bool:
        assess(item, taxonomy)
        return (min_score is None or item["score"] >= min_score) and (
            theme_id is None or item["themeAssignments"][0]["themeId"] == theme_id
        )

    after = None
    if last is not None:
        after = call.world.at_seq(call.workspace_id, VIRAL, last)
        if after is None or not kept(after):
            raise invalid_request(
                "unusable cursor: list again from the first page", reason="cursor_invalid"
            )
    items = filter(kept, walk(call.world, call.workspace_id, horizon, after))
    chunk = list(islice(items, query["limit"] + 1))
    more = len(chunk) > query["limit"]
    del chunk[query["limit"] :]
    next_cursor = None
    if more:
        next_cursor = cursors.issue(scope, filters, horizon * POSITION_SPAN + chunk[-1]["_seq"])
    return {
        "content": [view(item) for item in chunk],
        "nextCursor": next_cursor,
        "hasMore": next_cursor is not None,
    }
