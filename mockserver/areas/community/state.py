"""Community campaigns: review-first campaigns on a connected community-forum account.

Rules (interface document, and this mock's choices marked *inferred*):

- Create (``Idempotency-Key`` required, checked by validation): governance first (lock:
  ``403 forbidden`` for a key whose creator is neither owner nor admin; lock unreadable:
  ``503 upstream_unavailable`` with ``Retry-After``). Then the account: an id that is not a
  connected account of this workspace (another workspace's included) is ``404 not_found``; an
  account of another kind is ``400 invalid_request`` (``details.reason``
  ``account_not_community_forum``) and a community-forum account that is not connected is
  ``400 invalid_request`` (``account_not_connected``) (*inferred*, as the contract says).
  ``schedule.timezone`` must be an IANA zone (``400 unknown_timezone``, *inferred*).
- Omitted ``caps`` members take the contract's ``CommunityCaps.x-defaults`` (read from the
  spec); the campaign answers every cap. It starts ``active``; its agent (``kind``
  ``community``, ``reviewMode`` ``review-first``) is ``active`` while the campaign is and
  ``paused`` otherwise.
- PATCH changes only the fields sent (``404`` for an unknown id, then governance as on create);
  ``caps`` and ``schedule`` change member by member; ``brandBrainId`` and ``offerUrl`` may be
  set to null; new keywords re-derive the target communities (a name already there keeps its
  status); ``status`` pauses or resumes the agent. A campaign completed through
  ``PATCH /v1/campaigns/{id}`` cannot be resumed: ``400 invalid_request``
  (``campaign_completed``; the operation declares no 409, *inferred*).
- Derived fields (*inferred*): ``targetCommunities`` from the first five keywords (the first is
  ``approved``, others ``approved`` when their fit is at least 0.7, else ``proposed``;
  ``excluded`` when a negative keyword occurs in the name); ``smartLinkId`` wraps ``offerUrl``
  (null without one); ``accountReadiness`` reads the account live (connected, community-forum
  kind, at least 30 days old); ``weeklyPlan`` is the current local week's capacity
  (``caps`` × scheduled days); ``activity`` and ``metrics`` move on the clock (activity.py).
- Also a campaign: ``GET /v1/campaigns`` lists it with the same id (``source`` ``community``,
  ``automationMode`` ``review-first``, ``platforms`` ``["community"]``, ``title`` = name,
  ``description`` = objective, ``connectedAccountIds`` = [the account], ``agentId``, ``caps``
  ``maxPostsPerDay``/``maxActionsPerDay``, ``status`` active, paused or completed). Its general
  record in ``campaigns`` keeps only what the community record does not (``scheduledAt``,
  ``playbookId``, ``remixJobIds``, ``assetCount``); everything else is read from the community
  record, so the two views never disagree. ``PATCH /v1/campaigns/{id}`` on it (see
  :func:`apply_general_patch`): ``status`` paused/active/completed, ``title``, ``description``
  and ``caps`` change the community campaign (held to its own bounds), ``scheduledAt`` and
  ``playbookId`` the general record; ``draft``/``scheduled`` are ``409 conflict``
  (``community_campaign_status``); other values of ``connectedAccountIds``, ``platforms``,
  ``automationMode`` and any ``schedule`` are ``400 invalid_request``
  (``community_campaign_field``). Fixture community campaigns take the ids of two fixture
  campaigns (``cmp_acme_013``, ``cmp_acme_037``), which are then their general records.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from typing import TYPE_CHECKING, Any

from mockserver.areas.autopilots import timing
from mockserver.areas.community import activity
from mockserver.areas.community.activity import COLLECTION
from mockserver.call import Call
from mockserver.contract import default_contract
from mockserver.platform.envelope import public
from mockserver.platform.errors import conflict, invalid_request, not_found
from mockserver.platform.governance import require_config_access
from mockserver.world import World

if TYPE_CHECKING:
    import jsonschema  # imported where used (~25 ms): the first change of a community campaign

CAMPAIGNS = "campaigns"
ACCOUNTS = "connectedAccounts"
FORUM_KIND = "community-forum"
MAX_TARGETS = 5
MIN_ACCOUNT_AGE_DAYS = 30


@cache
def cap_defaults() -> dict[str, int]:
    """``CommunityCaps.x-defaults`` of the contract (the inferred mark left out)."""
    schema = default_contract().document["components"]["schemas"]["CommunityCaps"]
    return {k: v for k, v in schema["x-defaults"].items() if not k.startswith("x-")}


@cache
def _patch_validator() -> jsonschema.Draft202012Validator:
    import jsonschema

    document = default_contract().document
    return jsonschema.Draft202012Validator(
        {
            "$ref": "#/components/schemas/CommunityCampaignPatch",
            "components": document["components"],
        }
    )


def _digest(*parts: object) -> bytes:
    return hashlib.sha256(":".join(map(str, parts)).encode()).digest()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "community"


# -- reading ---------------------------------------------------------------------------------


def get(call: Call, campaign_id: str) -> dict[str, Any]:
    campaign = call.world.get(call.workspace_id, COLLECTION, campaign_id)
    if campaign is None:
        raise not_found(f"community campaign {campaign_id!r}")
    return campaign


def agent_view(campaign: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": campaign["agentId"],
        "kind": "community",
        "status": "active" if campaign["status"] == "active" else "paused",
        "reviewMode": "review-first",
        "campaignId": campaign["id"],
        "createdAt": campaign["createdAt"],
    }


def readiness(world: World, workspace_id: str, campaign: dict[str, Any], now: float) -> Any:
    account = world.get(workspace_id, ACCOUNTS, campaign["connectedAccountId"]) or {}
    age_days = (now - timing.parse(account.get("createdAt", timing.iso(now)))) / 86400
    checks = [
        {
            "name": "account_connected",
            "passed": bool(account.get("connected")),
            "message": "the account is connected"
            if account.get("connected")
            else "reconnect the account in the dashboard",
        },
        {
            "name": "community_forum_account",
            "passed": account.get("kind") == FORUM_KIND,
            "message": f"account {account.get('handle', '?')} is a community-forum account",
        },
        {
            "name": "account_age",
            "passed": age_days >= MIN_ACCOUNT_AGE_DAYS,
            "message": f"the account is {int(age_days)} days old "
            f"(communities trust accounts older than {MIN_ACCOUNT_AGE_DAYS} days)",
        },
    ]
    return {"ready": all(c["passed"] for c in checks), "checks": checks}


def weekly_plan(campaign: dict[str, Any], now: float) -> dict[str, Any]:
    schedule = campaign["schedule"]
    tz = timing.zone(schedule.get("timezone"))
    days = len(schedule.get("daysOfWeek") or range(7))
    caps = campaign["caps"]
    return {
        "weekOf": timing.week_start(now, tz),
        "posts": caps["maxPostsPerDay"] * days,
        "comments": caps["maxCommentsPerDay"] * days,
    }


def view(world: World, workspace_id: str, campaign: dict[str, Any], now: float) -> dict[str, Any]:
    record = public(campaign)
    record["activity"] = {
        **campaign["activity"],
        "autoReplyScope": "own_posts_only" if campaign["autoReplyOurPosts"] else "off",
        "pendingReview": campaign["activity"]["pendingPosts"]
        + campaign["activity"]["pendingReplies"],
    }
    record["accountReadiness"] = readiness(world, workspace_id, campaign, now)
    record["weeklyPlan"] = weekly_plan(campaign, now)
    return record


def general_status(campaign: dict[str, Any]) -> str:
    return "completed" if campaign.get("completedAt") else str(campaign["status"])


def general_view(general: dict[str, Any], campaign: dict[str, Any]) -> dict[str, Any]:
    """The campaign as ``GET /v1/campaigns`` lists it."""
    record = {k: v for k, v in public(general).items() if k != "schedule"}
    record.update(
        title=campaign["name"],
        description=campaign["objective"],
        connectedAccountIds=[campaign["connectedAccountId"]],
        platforms=["community"],
        automationMode="review-first",
        status=general_status(campaign),
        agentId=campaign["agentId"],
        source="community",
        caps={
            "maxPostsPerDay": campaign["caps"]["maxPostsPerDay"],
            "maxActionsPerDay": campaign["caps"]["maxActionsPerDay"],
        },
        createdAt=campaign["createdAt"],
        updatedAt=campaign["updatedAt"],
    )
    for field, empty in (("scheduledAt", None), ("playbookId", None), ("remixJobIds", [])):
        record.setdefault(field, empty)
    record.setdefault("assetCount", 0)
    return record


# -- derived fields --------------------------------------------------------------------------


def targets(
    campaign_id: str,
    keywords: list[str],
    negative: list[str],
    previous: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    kept = {t["name"]: t for t in previous or []}
    found: list[dict[str, Any]] = []
    for index, keyword in enumerate(dict.fromkeys(keywords)):
        name = f"c/{_slug(keyword)}"
        if any(t["name"] == name for t in found):
            continue
        if len(found) == MAX_TARGETS:
            break
        fit = round(0.55 + _digest(campaign_id, name)[0] / 255 * 0.4, 2)
        status = "approved" if index == 0 or fit >= 0.7 else "proposed"
        if name in kept:
            status = kept[name]["status"]
        if any(_slug(word) in _slug(keyword) for word in negative):
            status = "excluded"
        found.append(
            {"id": f"tc_{_slug(keyword)}", "name": name, "status": status, "fitScore": fit}
        )
    return found


def smart_link(campaign_id: str, offer_url: str | None) -> str | None:
    if offer_url is None:
        return None
    return "sl_" + hashlib.sha256(f"{campaign_id}:{offer_url}".encode()).hexdigest()[:12]


# -- writing ---------------------------------------------------------------------------------


def check_account(call: Call, account_id: str) -> dict[str, Any]:
    account = call.world.get(call.workspace_id, ACCOUNTS, account_id)
    if account is None:
        raise not_found(f"connected account {account_id!r}")
    if account.get("kind") != FORUM_KIND:
        raise invalid_request(
            f"account {account_id!r} is a {account.get('kind')} account, not a community-forum "
            "account",
            reason="account_not_community_forum",
            accountKind=account.get("kind"),
        )
    if not account.get("connected"):
        raise invalid_request(
            f"account {account_id!r} is not connected: reconnect it in the dashboard",
            reason="account_not_connected",
        )
    return account


def create(call: Call, body: dict[str, Any]) -> dict[str, Any]:
    assert call.caller is not None
    require_config_access(call.workspace, call.caller)
    check_account(call, body["connectedAccountId"])
    schedule = dict(body.get("schedule") or {})
    timing.zone(schedule.get("timezone"))
    campaign_id = call.new_id("cmp")
    offer_url = body.get("offerUrl")
    negative = list(body.get("negativeKeywords", []))
    campaign = {
        "id": campaign_id,
        "name": body["name"],
        "connectedAccountId": body["connectedAccountId"],
        "objective": body["objective"],
        "keywords": list(body["keywords"]),
        "targetCommunities": targets(campaign_id, body["keywords"], negative),
        "caps": {**cap_defaults(), **body.get("caps", {})},
        "autoReplyOurPosts": body["autoReplyOurPosts"],
        "createdAt": call.now_iso,
        "updatedAt": call.now_iso,
        "agentId": call.new_id("agt"),
        "brandBrainId": body.get("brandBrainId"),
        "offerUrl": offer_url,
        "smartLinkId": smart_link(campaign_id, offer_url),
        "negativeKeywords": negative,
        "activity": activity.empty_activity(),
        "metrics": {"impressions": 0, "upvotes": 0, "replies": 0, "clicks": 0},
        "marketingCampaignId": None,
        "marketingLibraryVersion": None,
        "marketingManifest": {"channels": ["community"], "assets": []},
        "status": "active",
        "schedule": schedule,
        "alertEmail": body.get("alertEmail"),
        "completedAt": None,
    }
    call.world.insert(call.workspace_id, COLLECTION, campaign)
    call.world.insert(
        call.workspace_id,
        CAMPAIGNS,
        {
            "id": campaign_id,
            "scheduledAt": None,
            "remixJobIds": [],
            "playbookId": None,
            "assetCount": 0,
            "source": "community",
            "createdAt": call.now_iso,
            "updatedAt": call.now_iso,
        },
    )
    activity.schedule_first_cycle(call.runtime, campaign, call.now.timestamp())
    return campaign


def check_patch(call: Call, campaign: dict[str, Any], changes: dict[str, Any]) -> None:
    if "schedule" in changes:
        timing.zone({**campaign["schedule"], **changes["schedule"]}.get("timezone"))
    if changes.get("status") == "active" and campaign.get("completedAt"):
        raise invalid_request(
            "this campaign was completed and cannot be resumed", reason="campaign_completed"
        )


def update(call: Call, campaign: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    assert call.caller is not None
    require_config_access(call.workspace, call.caller)
    check_patch(call, campaign, changes)
    apply(call, campaign, changes)
    return campaign


def apply(call: Call, campaign: dict[str, Any], changes: dict[str, Any]) -> None:
    """Write checked changes (no refusal may happen from here on)."""
    for field, value in changes.items():
        if field in ("caps", "schedule"):
            campaign[field] = {**campaign[field], **value}
        else:
            campaign[field] = list(value) if isinstance(value, list) else value
    if "keywords" in changes or "negativeKeywords" in changes:
        campaign["targetCommunities"] = targets(
            campaign["id"],
            campaign["keywords"],
            campaign["negativeKeywords"],
            campaign["targetCommunities"],
        )
    if "offerUrl" in changes:
        campaign["smartLinkId"] = smart_link(campaign["id"], campaign["offerUrl"])
    if "status" in changes or "schedule" in changes:
        activity.reschedule(call.runtime, campaign, call.now.timestamp())
    campaign["updatedAt"] = call.now_iso
    general = call.world.get(call.workspace_id, CAMPAIGNS, campaign["id"])
    if general is not None:
        general["updatedAt"] = call.now_iso


# -- the general campaign view's PATCH -------------------------------------------------------

FIXED = {"platforms": ["community"], "automationMode": "review-first"}
GENERAL_ONLY = ("scheduledAt", "playbookId")


def apply_general_patch(
    call: Call, general: dict[str, Any], campaign: dict[str, Any], changes: dict[str, Any]
) -> None:
    """``PATCH /v1/campaigns/{id}`` of a community campaign (governance already checked)."""
    import jsonschema

    fixed = dict(FIXED, connectedAccountIds=[campaign["connectedAccountId"]])
    wrong = sorted(f for f, v in changes.items() if f in fixed and v != fixed[f])
    if "schedule" in changes:
        wrong.append("schedule")
    if wrong:
        raise invalid_request(
            "a community campaign keeps its account, platform and review-first mode, and its "
            "schedule changes through PATCH /v1/community-campaigns/{campaignId}",
            reason="community_campaign_field",
            fields=wrong,
        )
    status = changes.get("status")
    if status in ("draft", "scheduled"):
        raise conflict(
            "a community campaign is active, paused or completed",
            reason="community_campaign_status",
        )
    community: dict[str, Any] = {}
    if "title" in changes:
        community["name"] = changes["title"]
    if "description" in changes:
        community["objective"] = changes["description"]
    if "caps" in changes:
        community["caps"] = dict(changes["caps"])
    if status in ("active", "paused"):
        community["status"] = status
    error = jsonschema.exceptions.best_match(_patch_validator().iter_errors(community))
    if community and error is not None:
        where = str(error.path[0]) if error.path else ""
        raise invalid_request(
            f"this change does not fit the community campaign: {error.message}",
            reason="community_campaign_bounds",
            field={"name": "title", "objective": "description"}.get(where, where),
        )
    check_patch(call, campaign, community)
    if status == "completed" and not campaign.get("completedAt"):
        community["status"] = "paused"
        campaign["completedAt"] = call.now_iso
    if community:
        apply(call, campaign, community)
    for field in GENERAL_ONLY:
        if field in changes:
            general[field] = changes[field]
    general["updatedAt"] = campaign["updatedAt"] = call.now_iso
