"""Campaigns: list (with status filter) and update."""

from __future__ import annotations

from typing import Any

from mockserver.areas.campaigns import state
from mockserver.call import Call
from mockserver.registry import handler


@handler("listCampaigns")
def list_campaigns(call: Call) -> dict[str, Any]:
    status = call.query["status"]

    def listed(campaign: dict[str, Any]) -> bool:
        return state.status_of(call, campaign) == status

    records = call.records("campaigns", where=None if status == "all" else listed)
    return call.page(
        "campaigns", records, visible=state.visible, view=lambda c: state.view(call, c)
    )


@handler("updateCampaign")
def update_campaign(call: Call) -> dict[str, Any]:
    campaign = state.get_campaign(call, call.path["campaignId"])
    return {"campaign": state.view(call, state.update(call, campaign, call.body))}
