"""Discovery configurations and their health: one configuration per channel.

Rules (all inferred: the interface document names these operations by title, or shows no
fields):

- A configuration belongs to one channel of the workspace (collection ``discoveryConfigs``).
  ``POST /v1/discovery/configs/{channelId}/plan`` compiles a plan (``plan.py``) and saves it as
  the channel's configuration: the first compile creates it (``createdAt``), a later one
  replaces every field in place, keeping its id and its place in ``GET /v1/discovery/configs``
  (oldest first). An unknown channel, or one of another workspace, answers ``404 not_found``;
  an archived channel answers ``409 conflict`` (``details.reason`` ``channel_archived``).
  Compiling is free, and viewer keys may not do it (it writes).
- A saved plan is collected at once: ``nextRunAt`` becomes now (or the end of a run still
  going), then every ``cadenceHours`` (``runs.py``).
- Sources have a deployment-wide status, ``ready`` unless the control plane sets ``degraded``
  or ``unavailable`` (``PUT /_mock/discovery/sources/{source}``).
- Health (``GET /v1/discovery/configs/{channelId}/health``), per source of the configuration:
  ``status``; ``lastCollectedAt``, the end of the latest run that collected it (null if never);
  ``freshnessSeconds``, seconds since then (grows with the clock, null if never);
  ``itemsCollected`` by that collection; ``expectedIntervalSeconds``, the cadence plus
  ``COLLECTION_GRACE_SECONDS``; ``stale``, true when the source was last collected (or, never
  collected, the configuration created) longer ago than that interval. ``overall`` is
  ``not_configured`` for a channel without a configuration, ``unavailable`` when every source
  is unavailable, ``degraded`` when any source is not ready or is stale, else ``ready``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from mockserver.areas.discovery import plan
from mockserver.areas.themes.taxonomy import Taxonomy
from mockserver.call import Call
from mockserver.platform.clock import parse_time
from mockserver.platform.envelope import iso_z, public
from mockserver.platform.errors import conflict, not_found
from mockserver.world import World

CONFIGS = "discoveryConfigs"
RUNS = "discoveryRuns"
VIRAL = "viralContent"
SECTION = "discovery"
COLLECTION_GRACE_SECONDS = 3600
SOURCE_STATUSES = ("ready", "degraded", "unavailable")
COLLECTED = ("collected", "degraded")  # run source outcomes that count as a collection


def channel_or_404(call: Call, channel_id: str) -> dict[str, Any]:
    channel = call.world.get(call.workspace_id, "channels", channel_id)
    if channel is None:
        raise not_found(f"channel {channel_id!r}")
    return channel


def config_of(world: World, workspace_id: str, channel_id: str) -> dict[str, Any] | None:
    for config in world.records(workspace_id, CONFIGS):
        if config["channelId"] == channel_id:
            return config
    return None


def source_status(world: World, source: str) -> str:
    return world.section(SECTION).get("sourceStatus", {}).get(source, "ready")


def set_source_status(world: World, source: str, status: str) -> None:
    world.section(SECTION).setdefault("sourceStatus", {})[source] = status


def running_run(world: World, workspace_id: str, config: dict[str, Any]) -> dict[str, Any] | None:
    run_id = config.get("_running")
    return None if run_id is None else world.get(workspace_id, RUNS, run_id)


def compile_plan(call: Call, taxonomy: Taxonomy) -> dict[str, Any]:
    """Check, compile and save the channel's configuration (all checks before any write)."""
    channel = channel_or_404(call, call.path["channelId"])
    if channel.get("enabled") is False:
        raise conflict(
            f"channel {channel['id']!r} is archived; enable it before planning discovery",
            reason="channel_archived",
        )
    settled = plan.settle(channel, call.body, taxonomy)
    fields = {
        "channelId": channel["id"],
        **settled,
        "plan": {
            "queries": plan.queries(settled, taxonomy),
            "compiledAt": call.now_iso,
            "taxonomyVersion": taxonomy.version,
        },
    }
    config = config_of(call.world, call.workspace_id, channel["id"])
    start = call.now.timestamp()
    if config is None:
        config = call.world.insert(
            call.workspace_id,
            CONFIGS,
            {"id": call.new_id("dcf"), **fields, "createdAt": call.now_iso},
        )
    else:
        running = running_run(call.world, call.workspace_id, config)
        if running is not None:
            start = max(start, running["_finishAt"])
        config.update(fields)
    config["nextRunAt"] = iso_epoch(start)
    config["updatedAt"] = call.now_iso
    call.runtime.scheduler.due(start)
    return config


def iso_epoch(epoch: float) -> str:
    return iso_z(datetime.fromtimestamp(epoch, UTC))


def view(config: dict[str, Any]) -> dict[str, Any]:
    return public(config)


# Health ------------------------------------------------------------------------------------------


def last_collections(
    world: World, workspace_id: str, channel_id: str
) -> dict[str, tuple[str, int]]:
    """Per source, the end of its latest collection and the items it brought."""
    found: dict[str, tuple[str, int]] = {}
    for run in world.records(workspace_id, RUNS):
        if run["channelId"] != channel_id or run["finishedAt"] is None:
            continue
        for outcome in run.get("sources", []):
            if outcome["status"] in COLLECTED:
                previous = found.get(outcome["source"])
                if previous is None or previous[0] <= run["finishedAt"]:
                    found[outcome["source"]] = (run["finishedAt"], outcome["itemsFound"])
    return found


def health(world: World, workspace_id: str, channel_id: str, now: datetime) -> dict[str, Any]:
    config = config_of(world, workspace_id, channel_id)
    checked_at = iso_z(now)
    if config is None:
        return {
            "channelId": channel_id,
            "overall": "not_configured",
            "sources": [],
            "checkedAt": checked_at,
            "configId": None,
            "nextRunAt": None,
        }
    interval = config["cadenceHours"] * 3600 + COLLECTION_GRACE_SECONDS
    collections = last_collections(world, workspace_id, channel_id)
    moment = now.timestamp()
    sources = []
    for name in config["sources"]:
        last = collections.get(name)
        since = parse_time(last[0] if last else created_at(config)).timestamp()
        sources.append(
            {
                "source": name,
                "status": source_status(world, name),
                "lastCollectedAt": last[0] if last else None,
                "freshnessSeconds": max(0, int(moment - since)) if last else None,
                "stale": moment - since > interval,
                "itemsCollected": last[1] if last else 0,
                "expectedIntervalSeconds": interval,
            }
        )
    return {
        "channelId": channel_id,
        "overall": overall(sources),
        "sources": sources,
        "checkedAt": checked_at,
        "configId": config["id"],
        "nextRunAt": config["nextRunAt"],
    }


def created_at(config: dict[str, Any]) -> str:
    """When the configuration was first compiled (fixtures may leave ``createdAt`` out)."""
    return config.get("createdAt") or config.get("updatedAt") or config["plan"]["compiledAt"]


def overall(sources: list[dict[str, Any]]) -> str:
    if sources and all(s["status"] == "unavailable" for s in sources):
        return "unavailable"
    if any(s["status"] != "ready" or s["stale"] for s in sources):
        return "degraded"
    return "ready"
