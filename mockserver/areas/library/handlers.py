"""Library: hooks (a bounded, changing sample) and the reference video catalogue. All free."""

from __future__ import annotations

import dataclasses
from typing import Any

from mockserver.areas.library import catalog, hooks
from mockserver.areas.themes.refs import check_theme_ids
from mockserver.call import Call
from mockserver.registry import handler


@handler("searchHooks")
def search_hooks(call: Call) -> dict[str, Any]:
    theme_id = call.query.get("themeId")
    if theme_id is not None:
        check_theme_ids([("/themeId", theme_id)], location="query")
    current, sampled_at = hooks.sample(call.world, call.now)
    found = hooks.search(current, call.query.get("q"), theme_id)
    page, next_offset = hooks.offset_page(found, call.query["offset"], call.query["limit"])
    return {
        "hooks": page,
        "nextOffset": next_offset,
        "total": len(found),
        "sampleSize": len(current),
        "sampledAt": sampled_at,
    }


@handler("getHookStats")
def hook_stats(call: Call) -> dict[str, Any]:
    current, sampled_at = hooks.sample(call.world, call.now)
    rows = hooks.stats(current)
    page, next_offset = hooks.offset_page(rows, call.query["offset"], call.query["limit"])
    return {
        "stats": page,
        "nextOffset": next_offset,
        "sampleSize": len(current),
        "sampledAt": sampled_at,
    }


@handler("listCatalogVideos")
def list_catalog_videos(call: Call) -> dict[str, Any]:
    domain = call.path["domain"]
    videos = catalog.records(call.world, domain)
    # A cursor is bound to its domain, and never to the deprecated offset: the cursor wins.
    query = {k: v for k, v in call.query.items() if k != "offset"}
    bound = dataclasses.replace(call, query={**query, "domain": domain})
    after = None
    if "cursor" not in call.query and "offset" in call.query:
        after = call.query["offset"]
    return bound.page("videos", videos, view=catalog.view, after_seq=after)
