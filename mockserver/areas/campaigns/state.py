"""Campaigns of every origin (API clients, first-party agents, community campaigns).

- PATCH changes only the fields sent: ``{"status": "paused"}`` leaves description, accounts,
  platforms, schedule and caps as they were.
- Any status may move to ``paused`` or ``completed``, and those two moves stay open to editor
  keys even when the workspace locks agent configuration; in a locked workspace an editor may
  change nothing else (403 ``forbidden``, inferred).
- A completed campaign does not move back to ``draft``, ``scheduled`` or ``active``
  (409 ``conflict``, inferred).
- Connected account ids must exist in the workspace (404 ``not_found``).
- Community campaigns are campaigns too: each has a record here with its own id (``source``
  ``community``), and everything the community campaign holds (title, description, account,
  platform, mode, status, caps) is read from it, so the two views agree (community/state.py);
  a PATCH of one goes to the community campaign (``community.state.apply_general_patch``).
- Some campaigns are hidden from API keys (``_hidden``, for example withdrawn drafts of
  first-party agents); lists filter them after reading, so a page can be empty while
  ``nextCursor`` is not null.
"""

from __future__ import annotations

from typing import Any

from mockserver.areas.community import state as community
from mockserver.call import Call
from mockserver.platform.envelope import public
from mockserver.platform.errors import ApiError, conflict, not_found
from mockserver.platform.governance import config_locked_for

OPEN_MOVES = frozenset({"paused", "completed"})


def visible(campaign: dict[str, Any]) -> bool:
    return not campaign.get("_hidden")


def community_of(call: Call, campaign: dict[str, Any]) -> dict[str, Any] | None:
    return call.world.get(call.workspace_id, community.COLLECTION, campaign["id"])


def view(call: Call, campaign: dict[str, Any]) -> dict[str, Any]:
    """A campaign as clients see it (a community campaign's fields read from it)."""
    backing = community_of(call, campaign)
    return public(campaign) if backing is None else community.general_view(campaign, backing)


def status_of(call: Call, campaign: dict[str, Any]) -> str:
    """A campaign's status as :func:`view` shows it (a community campaign's, read from it)."""
    backing = community_of(call, campaign)
    status: str = campaign["status"] if backing is None else community.general_status(backing)
    return status


def get_campaign(call: Call, campaign_id: str) -> dict[str, Any]:
    campaign = call.world.get(call.workspace_id, "campaigns", campaign_id)
    if campaign is None or not visible(campaign):
        raise not_found(f"campaign {campaign_id!r}")
    return campaign


def check_patch(call: Call, campaign: dict[str, Any], changes: dict[str, Any]) -> None:
    assert call.caller is not None
    only_open_move = set(changes) == {"status"} and changes["status"] in OPEN_MOVES
    if not only_open_move and config_locked_for(call.workspace, call.caller):
        raise ApiError(
            "forbidden",
            "this workspace locks agent configuration: editor keys may only pause or complete "
            "campaigns",
            details={"reason": "governance_locked"},
        )
    target = changes.get("status")
    if (
        target is not None
        and target not in OPEN_MOVES
        and view(call, campaign)["status"] == "completed"
        and target != "completed"
    ):
        raise conflict(
            f"a completed campaign cannot move back to {target}", reason="campaign_completed"
        )
    for account_id in changes.get("connectedAccountIds", []):
        if call.world.get(call.workspace_id, "connectedAccounts", account_id) is None:
            raise not_found(f"connected account {account_id!r}")


def update(call: Call, campaign: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    check_patch(call, campaign, changes)
    backing = community_of(call, campaign)
    if backing is not None:
        community.apply_general_patch(call, campaign, backing, changes)
        return campaign
    for field, value in changes.items():
        campaign[field] = value
    campaign["updatedAt"] = call.now_iso
    return campaign
