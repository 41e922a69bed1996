"""Discovery: per-channel plans and health, runs on the clock, scored viral content.

Operations (all free; only the plan compile writes, so viewer keys may read everything else):

- ``POST /v1/discovery/configs/{channelId}/plan``: compile the channel's niche, themes and
  keywords into one query per source and save it as the channel's configuration (created, or
  replaced in place); collection starts at once.
- ``GET /v1/discovery/configs``: the workspace's configurations, oldest first (cursor).
- ``GET /v1/discovery/configs/{channelId}/health``: per source ``status``, ``lastCollectedAt``,
  ``freshnessSeconds`` (ages with the clock), ``stale``; ``overall`` is ``not_configured``
  without a configuration.
- ``GET /v1/discovery/runs``: runs oldest first (cursor), optionally of one ``channelId`` (a
  channel that is not the workspace's simply has none: the contract declares no 404 here).
- ``GET /v1/viral-content``: scored items, highest score first, ``themeId``/``minScore`` filters.
- ``GET /v1/viral-content/{contentId}``: one item with ``themeAssignments`` and ``economics``.

The rules are in the modules beside this one: ``plan.py`` (sources and query compilation),
``state.py`` (configurations and health), ``runs.py`` (runs on the mock clock and what they
collect) and ``viral.py`` (assignments, economics and the ranked walk). The control plane sets a
source's status (``control.yaml``, ``control.py``).
"""

from __future__ import annotations

from typing import Any

from mockserver.areas.discovery import runs, state, viral
from mockserver.areas.themes.taxonomy import default_taxonomy
from mockserver.call import Call
from mockserver.platform.envelope import public
from mockserver.registry import handler

__all__ = ["runs"]  # imported for its ticker


@handler("getDiscoveryHealth")
def get_health(call: Call) -> dict[str, Any]:
    channel = state.channel_or_404(call, call.path["channelId"])
    return {"health": state.health(call.world, call.workspace_id, channel["id"], call.now)}


@handler("compileDiscoveryPlan")
def compile_plan(call: Call) -> dict[str, Any]:
    return {"config": state.view(state.compile_plan(call, default_taxonomy()))}


@handler("listDiscoveryConfigs")
def list_configs(call: Call) -> dict[str, Any]:
    return call.page("configs", call.records(state.CONFIGS), view=state.view)


@handler("listDiscoveryRuns")
def list_runs(call: Call) -> dict[str, Any]:
    records = call.records(state.RUNS, {"channelId": call.query.get("channelId")})
    return call.page("runs", records, view=public)


@handler("listViralContent")
def list_viral_content(call: Call) -> dict[str, Any]:
    return viral.page(call, default_taxonomy())


@handler("getViralContent")
def get_viral_content(call: Call) -> dict[str, Any]:
    item = viral.get(call, call.path["contentId"], default_taxonomy())
    return {"content": viral.view(item)}
