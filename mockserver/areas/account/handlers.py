"""Capabilities, prices, balance and usage."""

from __future__ import annotations

from typing import Any

from mockserver.call import Call
from mockserver.platform.clock import parse_time
from mockserver.registry import handler


@handler("getCapabilities")
def get_capabilities(call: Call) -> dict[str, Any]:
    """The live catalogue, read from the same table charges use. Free."""
    return call.runtime.seams.quote_catalogue(call.world, call.workspace)


@handler("getUsage")
def get_usage(call: Call) -> dict[str, Any]:
    """The workspace's charges, oldest first; any role may read them."""
    since = parse_time(call.query["since"]) if "since" in call.query else None
    until = parse_time(call.query["until"]) if "until" in call.query else None

    def selected(entry: dict[str, Any]) -> bool:
        moment = parse_time(entry["createdAt"])
        return (since is None or moment >= since) and (until is None or moment < until)

    entries = call.records("usage", where=None if since is None and until is None else selected)
    page = call.page("usage", entries)
    page["totalCredits"] = sum(e["credits"] for e in entries.after(0))  # all selected, not the page
    return page
