"""Autopilots: one content autopilot per channel, enabled or paused, with daily caps.

Rules (interface document, and this mock's choices marked *inferred*):

- ``GET /v1/autopilots/{channelId}``: a channel of the workspace (else ``404 not_found``; a
  channel of another workspace is exactly like a missing one). A channel that never saved its
  autopilot answers the defaults, which are read from the contract's ``AutopilotSave`` schema
  (``enabled`` false, ``maxVideosPerDay`` 3, ``maxPostsPerDay`` 12, ``requireApproval`` true,
  ``timezone`` UTC), with ``nextScheduledRunAt`` and ``updatedAt`` null.
- ``PUT`` replaces the whole configuration: an omitted field takes its default (validation
  fills them in). ``enabled: false`` pauses. *Inferred*: an unknown ``timezone`` answers
  ``400 invalid_request`` (``unknown_timezone``); enabling the autopilot of an archived channel
  answers ``400 invalid_request`` (``channel_archived``; pausing it is always allowed).
- Governance lock (``platform/governance.py``): when the workspace locks agent configuration,
  owners and admins may save anything. Any other key (editors; viewers never reach the handler)
  may only *pause*: the saved configuration must have ``enabled`` false and otherwise exactly
  the current settings (``maxVideosPerDay``, ``maxPostsPerDay``, ``requireApproval``,
  ``timezone``, after defaults); anything else answers ``403 forbidden``
  (``details.reason`` ``governance_locked``). So an editor pauses by sending the current
  settings with ``enabled: false`` (``{"enabled": false}`` alone is enough while the settings
  are the defaults). When the lock cannot be read, every key gets ``503 upstream_unavailable``
  with ``Retry-After``.
- Scheduled runs (*inferred*): an enabled autopilot starts one run a day at 06:00 local time in
  its ``timezone`` (``nextScheduledRunAt``); a paused one has ``nextScheduledRunAt`` null and
  starts none. Enabling computes the next 06:00 after now; saving an enabled autopilot again
  keeps its next run unless the time zone changed.
- The autopilot files its renders and posts under a project of the workspace that it creates
  on its first run (``Autopilot: <channel name>``), because every job belongs to a project.
"""

from __future__ import annotations

from datetime import time
from functools import cache
from typing import Any

from mockserver.areas.autopilots import timing
from mockserver.areas.channels.state import get_channel
from mockserver.call import Call
from mockserver.contract import default_contract
from mockserver.platform.envelope import iso_z
from mockserver.platform.errors import ApiError, conflict, invalid_request
from mockserver.platform.governance import config_locked_for
from mockserver.world import World

COLLECTION = "autopilots"
PROJECTS = "projects"
SCHEDULED_AT = time(6, 0)  # local time of day of scheduled runs (inferred)
SETTINGS = ("maxVideosPerDay", "maxPostsPerDay", "requireApproval", "timezone")


@cache
def defaults() -> dict[str, Any]:
    """The saved fields and their defaults, as the contract's ``AutopilotSave`` states them."""
    schema = default_contract().document["components"]["schemas"]["AutopilotSave"]
    return {name: spec["default"] for name, spec in schema["properties"].items()}


def stored(world: World, workspace_id: str, channel_id: str) -> dict[str, Any] | None:
    return world.get(workspace_id, COLLECTION, channel_id)


def config(world: World, workspace_id: str, channel_id: str) -> dict[str, Any]:
    """The channel's autopilot: the saved one, or the defaults (not stored)."""
    record = stored(world, workspace_id, channel_id)
    if record is not None:
        return record
    return {
        "id": channel_id,
        "channelId": channel_id,
        **defaults(),
        "nextScheduledRunAt": None,
        "updatedAt": None,
    }


def view(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "channelId": record["channelId"],
        "enabled": record["enabled"],
        "maxVideosPerDay": record["maxVideosPerDay"],
        "maxPostsPerDay": record["maxPostsPerDay"],
        "requireApproval": record["requireApproval"],
        "timezone": record["timezone"],
        "nextScheduledRunAt": record["nextScheduledRunAt"],
        "updatedAt": record["updatedAt"],
    }


def read(call: Call, channel_id: str) -> dict[str, Any]:
    get_channel(call, channel_id)
    return config(call.world, call.workspace_id, channel_id)


def refuse_if_paused(autopilot: dict[str, Any]) -> None:
    """A paused autopilot (never saved counts as paused) refuses manual runs, approvals and
    retries: ``409 conflict`` ``autopilot_paused`` (the product's ``refuse_paused_autopilot``
    seam, mockserver/seams.py)."""
    if not autopilot["enabled"]:
        raise conflict(
            f"the autopilot of channel {autopilot['channelId']!r} is paused: enable it to run, "
            "approve or retry",
            reason="autopilot_paused",
        )


def is_pause_only(current: dict[str, Any], body: dict[str, Any]) -> bool:
    return body["enabled"] is False and all(body[name] == current[name] for name in SETTINGS)


def check_save(call: Call, channel: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """Every refusal of a PUT, before anything is written; the current configuration."""
    assert call.caller is not None
    current = config(call.world, call.workspace_id, channel["id"])
    if config_locked_for(call.workspace, call.caller) and not is_pause_only(current, body):
        raise ApiError(
            "forbidden",
            "this workspace locks agent configuration to owners and admins; other keys may only "
            "pause the autopilot (enabled false, settings unchanged)",
            details={"reason": "governance_locked"},
        )
    timing.zone(body["timezone"])
    if body["enabled"] and not channel.get("enabled", True):
        raise invalid_request(
            f"channel {channel['id']!r} is archived: its autopilot cannot be enabled",
            reason="channel_archived",
        )
    return current


def save(call: Call, channel_id: str, body: dict[str, Any]) -> dict[str, Any]:
    channel = get_channel(call, channel_id)
    current = check_save(call, channel, body)
    record = stored(call.world, call.workspace_id, channel_id)
    if record is None:
        record = call.world.insert(
            call.workspace_id, COLLECTION, {"id": channel_id, "channelId": channel_id}
        )
    next_run = None
    if body["enabled"]:
        keep = current["enabled"] and current["timezone"] == body["timezone"]
        next_run = current["nextScheduledRunAt"] if keep else None
        if next_run is None:
            tz = timing.zone(body["timezone"])
            next_run = timing.iso(timing.next_local_time(call.now.timestamp(), SCHEDULED_AT, tz))
    record.update({name: body[name] for name in ("enabled", *SETTINGS)})
    record["nextScheduledRunAt"] = next_run
    record["updatedAt"] = call.now_iso
    if next_run is not None:
        call.runtime.scheduler.due(timing.parse(next_run))
    return record


def project_for(world: World, workspace_id: str, channel_id: str, at: float) -> str:
    """The project the channel's autopilot files its work under (created on first need)."""
    for project in world.records(workspace_id, PROJECTS):
        if project.get("_autopilotChannelId") == channel_id:
            return str(project["id"])
    channel = world.get(workspace_id, "channels", channel_id) or {"name": channel_id}
    stamp = iso_z(timing.moment(at))
    project = world.insert(
        workspace_id,
        PROJECTS,
        {
            "id": world.ids.new("prj"),
            "title": f"Autopilot: {channel['name']}",
            "mediaType": "video",
            "description": "Videos the channel's autopilot makes and publishes.",
            "createdAt": stamp,
            "updatedAt": stamp,
            "_autopilotChannelId": channel_id,
        },
    )
    return str(project["id"])
