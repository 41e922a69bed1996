"""What a community campaign's agent does on the mock clock (all of it *inferred*).

The agent of an ``active`` campaign works in cycles, every ``schedule.everyNHours`` hours
(4 when not set) from when it was created or resumed. A cycle happens only on the schedule's
``daysOfWeek`` (0 is Sunday), inside its ``window`` (local ``start`` to ``end``, in
``timezone``), at most ``maxRunsPerDay`` times a local day, and never while the workspace's
kill switch is on or its governance policy cannot be read. A paused or completed campaign's
agent does nothing. Each cycle, deterministically (the same history for the same clock):

1. it drafts one post for an ``approved`` target community (rotating) while the day's
   ``maxPostsPerDay`` and ``perSubPostsPerDay`` allow; a draft carries the offer link
   (``promotional``) only while that keeps promotional drafts within ``promoRatioPct``;
2. it finds a thread by someone else matching the keywords and drafts a reply;
3. people comment on the campaign's own published posts (1 to 3 comments, when it has any):
   with ``autoReplyOurPosts`` the agent answers each at once (``autoReplies``), otherwise it
   drafts the replies for review.

Posts and replies to anything but comments on the campaign's own posts are never automatic:
they wait in ``pendingReview`` (``pendingPosts`` + ``pendingReplies``) until a person reviews
them (in the mock: ``POST /_mock/community-campaigns/{campaignId}/review``, which publishes
them: ``posts`` and ``comments`` grow). So ``activity.autoReplyTargets.otherComments`` stays 0
and every ``auto_reply`` entry of ``activity.recent`` (the last 20 actions) targets an
``own_post_comment``. Comments, replies and drafts count against ``maxCommentsPerDay``, and
every action against ``maxActionsPerDay``. ``metrics`` grow with the published posts
(``replies`` counts comments received on them; ``clicks`` need a smart link).
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from mockserver.areas.autopilots import timing
from mockserver.platform.scheduler import ticker
from mockserver.runtime import Runtime
from mockserver.world import World

COLLECTION = "communityCampaigns"
DEFAULT_EVERY_HOURS = 4
RECENT = 20


def empty_activity() -> dict[str, Any]:
    return {
        "posts": 0,
        "comments": 0,
        "autoReplies": 0,
        "pendingPosts": 0,
        "pendingReplies": 0,
        "lastActionAt": None,
        "autoReplyTargets": {"ownPostComments": 0, "otherComments": 0},
        "recent": [],
    }


def normalise(campaign: dict[str, Any]) -> None:
    """Fill what a hand-written fixture record may leave out, so the clock never trips on it."""
    campaign.setdefault("schedule", {})
    campaign.setdefault("status", "active")
    campaign.setdefault("completedAt", None)
    campaign["activity"] = {**empty_activity(), **campaign.get("activity", {})}
    metrics = {"impressions": 0, "upvotes": 0, "replies": 0, "clicks": 0}
    campaign["metrics"] = {**metrics, **campaign.get("metrics", {})}


def interval(campaign: dict[str, Any]) -> float:
    return float(campaign["schedule"].get("everyNHours", DEFAULT_EVERY_HOURS) * 3600)


def acting(campaign: dict[str, Any]) -> bool:
    return campaign["status"] == "active" and not campaign.get("completedAt")


def schedule_first_cycle(rt: Runtime, campaign: dict[str, Any], now: float) -> None:
    reschedule(rt, campaign, now)


def reschedule(rt: Runtime, campaign: dict[str, Any], now: float) -> None:
    """The next cycle one interval from now (after create, resume or a schedule change)."""
    if acting(campaign):
        campaign["_nextCycleAt"] = now + interval(campaign)
        rt.scheduler.due(campaign["_nextCycleAt"])
    else:
        campaign["_nextCycleAt"] = None


def _first_after(campaign: dict[str, Any], now: float) -> float:
    """Fixture campaigns: the first cycle boundary (from ``createdAt``) after now."""
    anchor, step = timing.parse(campaign["createdAt"]), interval(campaign)
    return anchor + (int(max(0.0, now - anchor) // step) + 1) * step


def _day(campaign: dict[str, Any], at: float) -> dict[str, Any]:
    tz = timing.zone(campaign["schedule"].get("timezone"))
    date = timing.local_day(at, tz)
    day = campaign.get("_day")
    if day is None or day["date"] != date:
        day = {"date": date, "runs": 0, "posts": 0, "comments": 0, "actions": 0, "perSub": {}}
        campaign["_day"] = day
    return day


def _in_schedule(campaign: dict[str, Any], at: float, day: dict[str, Any]) -> bool:
    schedule = campaign["schedule"]
    tz = timing.zone(schedule.get("timezone"))
    days = schedule.get("daysOfWeek")
    if days and timing.weekday_sunday_zero(at, tz) not in days:
        return False
    window = schedule.get("window") or {}
    if "start" in window and "end" in window:
        minute = timing.minutes_of_day(at, tz)
        start, end = (int(t[:2]) * 60 + int(t[3:]) for t in (window["start"], window["end"]))
        inside = start <= minute < end if start <= end else minute >= start or minute < end
        if not inside:
            return False
    limit = schedule.get("maxRunsPerDay")
    return limit is None or day["runs"] < limit


def _log(campaign: dict[str, Any], at: float, action: str, target: str, **extra: Any) -> None:
    recent = campaign["activity"]["recent"]
    recent.append({"at": timing.iso(at), "action": action, "target": target, **extra})
    del recent[:-RECENT]
    campaign["activity"]["lastActionAt"] = timing.iso(at)


def cycle(campaign: dict[str, Any], at: float) -> None:
    """One cycle of the agent at ``at`` (see the module docstring)."""
    day = _day(campaign, at)
    if not _in_schedule(campaign, at, day):
        return
    day["runs"] += 1
    number = campaign["_cycles"] = campaign.get("_cycles", 0) + 1
    noise = hashlib.sha256(f"{campaign['id']}:{number}".encode()).digest()
    act, caps, metrics = campaign["activity"], campaign["caps"], campaign["metrics"]

    def room(kind: str, cap: str) -> bool:
        return day[kind] < caps[cap] and day["actions"] < caps["maxActionsPerDay"]

    approved = [t for t in campaign["targetCommunities"] if t["status"] == "approved"]
    if approved and room("posts", "maxPostsPerDay"):
        target = approved[(number - 1) % len(approved)]["name"]
        if day["perSub"].get(target, 0) < caps["perSubPostsPerDay"]:
            drafted = campaign["_drafted"] = campaign.get("_drafted", 0) + 1
            promo = campaign.get("_promo", 0)
            promotional = (
                bool(campaign["offerUrl"]) and (promo + 1) * 100 <= caps["promoRatioPct"] * drafted
            )
            campaign["_promo"] = promo + promotional
            act["pendingPosts"] += 1
            day["posts"] += 1
            day["actions"] += 1
            day["perSub"][target] = day["perSub"].get(target, 0) + 1
            _log(campaign, at, "draft_post", "community", community=target, promotional=promotional)
    if approved and room("comments", "maxCommentsPerDay"):
        target = approved[noise[4] % len(approved)]["name"]
        act["pendingReplies"] += 1
        day["comments"] += 1
        day["actions"] += 1
        _log(campaign, at, "draft_reply", "thread", community=target)
    if act["posts"] > 0:
        arrived = 1 + noise[0] % 3
        metrics["replies"] += arrived
        for _ in range(arrived):
            if not room("comments", "maxCommentsPerDay"):
                break
            day["comments"] += 1
            day["actions"] += 1
            if campaign["autoReplyOurPosts"]:
                act["autoReplies"] += 1
                act["comments"] += 1
                act["autoReplyTargets"]["ownPostComments"] += 1
                _log(campaign, at, "auto_reply", "own_post_comment")
            else:
                act["pendingReplies"] += 1
                _log(campaign, at, "draft_reply", "own_post_comment")
        metrics["impressions"] += 25 * act["posts"] + noise[1] % 40
        metrics["upvotes"] += noise[2] % (act["posts"] + 1)
        if campaign["smartLinkId"]:
            metrics["clicks"] += noise[3] % 3


def review(campaign: dict[str, Any], at: float, posts: int | None, replies: int | None) -> None:
    """A person approves pending drafts: they are published (all of them when not limited)."""
    act = campaign["activity"]
    posts = act["pendingPosts"] if posts is None else min(posts, act["pendingPosts"])
    replies = act["pendingReplies"] if replies is None else min(replies, act["pendingReplies"])
    act["pendingPosts"] -= posts
    act["pendingReplies"] -= replies
    act["posts"] += posts
    act["comments"] += replies
    if posts or replies:
        _log(campaign, at, "published", "review", posts=posts, replies=replies)
    campaign["updatedAt"] = timing.iso(at)


def _may_act(world: World, workspace_id: str) -> bool:
    governance = world.workspace(workspace_id)["governance"]
    return bool(governance["policyReadable"] and not governance["killSwitch"])


def bring_up_to_date(world: World, workspace_id: str, campaign: dict[str, Any], now: float) -> Any:
    """Every cycle that fell due by ``now``; the next cycle's time, or None."""
    if "_nextCycleAt" not in campaign:
        normalise(campaign)
    if not acting(campaign):
        campaign["_nextCycleAt"] = None
        return None
    if campaign.get("_nextCycleAt") is None:
        campaign["_nextCycleAt"] = _first_after(campaign, now)
    while campaign["_nextCycleAt"] <= now:
        if _may_act(world, workspace_id):
            cycle(campaign, campaign["_nextCycleAt"])
        campaign["_nextCycleAt"] += interval(campaign)
    return campaign["_nextCycleAt"]


@ticker("community")
def tick(rt: Runtime, now: datetime) -> float | None:
    world, moment = rt.world, now.timestamp()
    upcoming = [
        when
        for workspace_id in world.workspaces
        for campaign in world.records(workspace_id, COLLECTION)
        if (when := bring_up_to_date(world, workspace_id, campaign, moment)) is not None
    ]
    return min(upcoming) if upcoming else None
