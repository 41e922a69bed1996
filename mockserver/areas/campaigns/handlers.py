"""Campaigns: list (with status filter) and update."""

from __future__ import annotations

from typing import Any

from mockserver.areas.campaigns import state
from mockserver.call import Call
from mockserver.registry import handler


@handler("listCampaigns")
def list_campaigns(call: Call) -> dict[str, Any]:
    status = call.query["status"]
    records = call.world.records(call.workspace_id, "campaigns")
    if status != "all":
        records = (c for c in records if state.view(call, c)["status"] == status)
    return call.page(
        "campaigns", records, visible=state.visible, view=lambda c: state.view(call, c)
    )


@handler("updateCampaign")
def update_campaign(call: Call) -> dict[str, Any]:
    campaign = state.get_campaign(call, call.path["campaignId"])
    return {"campaign": state.view(call, state.update(call, campaign, call.body))}
