"""Community campaigns: create (with the agent that drives it), list, read and update.

The rules are in ``state.py`` (records, governance, accounts, the general campaign view) and
``activity.py`` (what the agent does on the clock).
"""

from __future__ import annotations

from typing import Any

from mockserver.areas.community import state
from mockserver.areas.community.activity import COLLECTION
from mockserver.call import Call
from mockserver.registry import handler


def _view(call: Call, campaign: dict[str, Any]) -> dict[str, Any]:
    return state.view(call.world, call.workspace_id, campaign, call.now.timestamp())


@handler("createCommunityCampaign")
def create_campaign(call: Call) -> dict[str, Any]:
    campaign = state.create(call, call.body)
    return {"campaign": _view(call, campaign), "agent": state.agent_view(campaign)}


@handler("listCommunityCampaigns")
def list_campaigns(call: Call) -> dict[str, Any]:
    return call.page("campaigns", call.records(COLLECTION), view=lambda c: _view(call, c))


@handler("getCommunityCampaign")
def get_campaign(call: Call) -> dict[str, Any]:
    return {"campaign": _view(call, state.get(call, call.path["campaignId"]))}


@handler("updateCommunityCampaign")
def update_campaign(call: Call) -> dict[str, Any]:
    campaign = state.get(call, call.path["campaignId"])
    return {"campaign": _view(call, state.update(call, campaign, call.body))}
