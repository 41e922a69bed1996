"""Discovery runs on the mock clock, and the scored viral content they collect.

Rules (inferred: the interface document names discovery runs by title only):

- Every configuration of an enabled channel runs at its ``nextRunAt`` and then every
  ``cadenceHours``. A run starts ``running`` and ends ``RUN_SECONDS_PER_SOURCE`` seconds per
  source later, ``succeeded`` when at least one source was collected, else ``failed`` (every
  source of its plan was unavailable). Each transition is stamped with the moment it fell due,
  so moving the manual clock gives the history that living through the time would.
- While a channel is archived its due slots are skipped (no run); after a long jump of the clock
  at most ``MAX_CATCH_UP_RUNS`` missed runs per configuration are made up, the latest ones (a
  scheduler's catch-up limit, keeping a year's jump cheap).
- A run collects with the plan it started with. Per source (``sources`` on the run): a ready
  source brings 1 to 3 items, a degraded one 1 (outcome ``degraded``), an unavailable one none
  (outcome ``unavailable``). What a run brings is deterministic: counts, titles, hashtags,
  categories, scores and views follow from the channel, the run's number for that channel and the
  plan (a hash of them, no randomness); ids come from the mock's id factory.
- Each item is classified once, when collected, into canonical theme assignments with
  provenance (``themes/assign.py``) and carries the economics priors of its top canonical theme
  (``viral.py``).
"""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime
from typing import Any

from mockserver.areas.discovery import plan, viral
from mockserver.areas.discovery.state import (
    CONFIGS,
    RUNS,
    VIRAL,
    running_run,
    source_status,
)
from mockserver.areas.themes.taxonomy import Taxonomy, default_taxonomy
from mockserver.platform.clock import parse_time
from mockserver.platform.envelope import iso_z
from mockserver.platform.scheduler import ticker
from mockserver.runtime import Runtime
from mockserver.world import World

RUN_SECONDS_PER_SOURCE = 60
MAX_CATCH_UP_RUNS = 24
MAX_ITEMS_PER_SOURCE = 3
FAILED_ERROR = "every source of the plan was unavailable"
TITLES = (
    "I tried {kw} for 30 days: here's what happened",
    "{n} {kw} mistakes everyone makes",
    "The {kw} trick nobody talks about",
    "Why {kw} is about to change",
    "{Kw} for beginners: start here",
    "Stop doing {kw} like this",
    "What {n} years of {kw} taught me",
    "The truth about {kw}",
)
DESCRIPTIONS = (
    "{Kw}, explained in under a minute, with {kw2} tips you can use today.",
    "A quick look at {kw} and {kw2}, from someone who learned the hard way.",
    "Everything about {kw} in one video. Part two covers {kw2}.",
)


def _hash(*parts: object) -> int:
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def _iso(epoch: float) -> str:
    return iso_z(datetime.fromtimestamp(epoch, UTC))


def _epoch(text: str) -> float:
    return parse_time(text).timestamp()


# The ticker -----------------------------------------------------------------------------------


def next_event(world: World, workspace_id: str, config: dict[str, Any], moment: float) -> float:
    """When a configuration next has something to do: its run ends, or its next run starts.

    A configuration loaded without ``nextRunAt`` (another fixtures file) collects at once.
    """
    running = running_run(world, workspace_id, config)
    if running is not None:
        return float(running["_finishAt"])
    config.setdefault("nextRunAt", _iso(moment))
    return _epoch(config["nextRunAt"])


def earliest(world: World, moment: float) -> tuple[float, str, dict[str, Any]] | None:
    found: tuple[float, int, str, dict[str, Any]] | None = None
    for workspace_id in world.workspaces:
        for config in world.records(workspace_id, CONFIGS):
            at = next_event(world, workspace_id, config, moment)
            if found is None or (at, config["_seq"]) < (found[0], found[1]):
                found = (at, config["_seq"], workspace_id, config)
    return None if found is None else (found[0], found[2], found[3])


@ticker("discovery")
def tick(rt: Runtime, now: datetime) -> float | None:
    """Apply every run start and end that fell due by ``now``, in time order."""
    moment = now.timestamp()
    while True:
        event = earliest(rt.world, moment)
        if event is None:
            return None
        at, workspace_id, config = event
        if at > moment:
            return at
        step(rt, workspace_id, config, at, moment)


def step(rt: Runtime, workspace_id: str, config: dict[str, Any], at: float, moment: float) -> None:
    world = rt.world
    running = running_run(world, workspace_id, config)
    if running is not None:
        finish(rt, workspace_id, config, running)
        return
    cadence = config["cadenceHours"] * 3600
    behind = math.floor((moment - at) / cadence)  # further slots already due after this one
    channel = world.get(workspace_id, "channels", config["channelId"])
    if channel is None or channel.get("enabled") is False:
        config["nextRunAt"] = _iso(at + (behind + 1) * cadence)
        return
    if behind >= MAX_CATCH_UP_RUNS:
        at += (behind - MAX_CATCH_UP_RUNS + 1) * cadence
    start(world, workspace_id, config, at)
    config["nextRunAt"] = _iso(at + cadence)


def start(world: World, workspace_id: str, config: dict[str, Any], at: float) -> dict[str, Any]:
    if "_runCount" not in config:
        channel_id = config["channelId"]
        runs = world.records(workspace_id, RUNS)
        config["_runCount"] = sum(1 for run in runs if run["channelId"] == channel_id)
    config["_runCount"] += 1
    sources = list(config["sources"])
    run = world.insert(
        workspace_id,
        RUNS,
        {
            "id": world.ids.new("drn"),
            "channelId": config["channelId"],
            "configId": config["id"],
            "status": "running",
            "startedAt": _iso(at),
            "finishedAt": None,
            "itemsFound": 0,
            "error": None,
            "sources": [{"source": s, "status": "pending", "itemsFound": 0} for s in sources],
            "_number": config["_runCount"],
            "_finishAt": at + RUN_SECONDS_PER_SOURCE * max(1, len(sources)),
            "_plan": {key: config[key] for key in ("niche", "themeIds", "keywords", "sources")},
        },
    )
    config["_running"] = run["id"]
    return run


def finish(rt: Runtime, workspace_id: str, config: dict[str, Any], run: dict[str, Any]) -> None:
    world, taxonomy = rt.world, default_taxonomy()
    at = float(run["_finishAt"])
    outcomes, items = [], []
    for index, source in enumerate(run["_plan"]["sources"]):
        status = source_status(world, source)
        count = 0
        if status != "unavailable":
            full = _hash(run["channelId"], run["_number"], source, "count") % MAX_ITEMS_PER_SOURCE
            count = 1 if status == "degraded" else 1 + full
        outcome = {"ready": "collected"}.get(status, status)
        outcomes.append({"source": source, "status": outcome, "itemsFound": count})
        for position in range(count):
            items.append(collect(world, run, source, index * MAX_ITEMS_PER_SOURCE + position, at))
    collected = any(o["status"] != "unavailable" for o in outcomes)
    run.update(
        {
            "status": "succeeded" if collected else "failed",
            "finishedAt": _iso(at),
            "itemsFound": len(items),
            "error": None if collected else FAILED_ERROR,
            "sources": outcomes,
        }
    )
    for item in items:
        world.insert(workspace_id, VIRAL, viral.assess(item, taxonomy))
    config.pop("_running", None)


# What a run collects ------------------------------------------------------------------------


def collect(
    world: World, run: dict[str, Any], source: str, position: int, at: float
) -> dict[str, Any]:
    """One viral-content item, deterministic from the run (channel, number, plan) and position."""
    taxonomy = default_taxonomy()
    key = (run["channelId"], run["_number"], source, position)
    themes = run["_plan"]["themeIds"]
    theme_id = themes[_hash(*key, "theme") % len(themes)] if themes else None
    keywords = list(run["_plan"]["keywords"]) or [run["_plan"]["niche"]]
    theme_keywords = _theme_keywords(taxonomy, theme_id)
    kw = keywords[_hash(*key, "kw") % len(keywords)]
    kw2 = (theme_keywords or keywords)[_hash(*key, "kw2") % len(theme_keywords or keywords)]
    slots = {"kw": kw, "Kw": kw[:1].upper() + kw[1:], "kw2": kw2, "n": 3 + _hash(*key, "n") % 5}
    score = round(40 + _hash(*key, "score") % 600 / 10, 1)
    views = int(10 ** (3 + score / 25) * (0.75 + _hash(*key, "views") % 50 / 100))
    item_id = world.ids.new("vc")
    categories: list[dict[str, str]] = []
    if theme_id is not None:
        categories = plan.specific_categories(taxonomy, plan.SOURCES[source].system, theme_id)[:1]
    return {
        "id": item_id,
        "title": TITLES[_hash(*key, "title") % len(TITLES)].format(**slots),
        "description": DESCRIPTIONS[_hash(*key, "text") % len(DESCRIPTIONS)].format(**slots),
        "hashtags": [t for t in dict.fromkeys(plan.tag(k) for k in (kw, kw2)) if t != "#"],
        "sourceCategories": categories,
        "url": f"https://{source}.example.com/p/{item_id}",
        "platform": source,
        "channelId": run["channelId"],
        "runId": run["id"],
        "score": score,
        "views": views,
        "collectedAt": _iso(at),
    }


def _theme_keywords(taxonomy: Taxonomy, theme_id: str | None) -> list[str]:
    theme = taxonomy.theme(theme_id) if theme_id else None
    return list(theme["keywords"]) if theme else []
