"""Campaigns behave as the interface document says."""

from __future__ import annotations

import pytest


def campaign(api, campaign_id: str) -> dict:
    return next(
        c for c in api.walk("/v1/campaigns", "campaigns", limit=100) if c["id"] == campaign_id
    )


def test_campaign_list_status_filter_defaults_to_all(api):
    everything = api.walk("/v1/campaigns", "campaigns", limit=100)
    assert {c["status"] for c in everything} == {
        "draft",
        "scheduled",
        "active",
        "paused",
        "completed",
    }
    assert api.walk("/v1/campaigns", "campaigns", limit=100, status="all") == everything
    for status in ("draft", "scheduled", "active", "paused", "completed"):
        subset = api.walk("/v1/campaigns", "campaigns", limit=37, status=status)
        assert subset == [c for c in everything if c["status"] == status]


def test_campaigns_of_every_origin_are_listed(api):
    sources = {c["source"] for c in api.walk("/v1/campaigns", "campaigns", limit=100)}
    assert {"api", "agent"} <= sources


def test_pausing_a_campaign_leaves_everything_else_as_it_was(api):
    before = campaign(api, "cmp_acme_003")
    after = api.patch("/v1/campaigns/cmp_acme_003", json={"status": "paused"}).json()["campaign"]
    assert after["status"] == "paused"
    for field in (
        "title",
        "description",
        "connectedAccountIds",
        "platforms",
        "schedule",
        "caps",
        "automationMode",
    ):
        assert after[field] == before[field], field
    assert campaign(api, "cmp_acme_003") == after


@pytest.mark.parametrize("source_status", ["draft", "scheduled", "active", "paused", "completed"])
@pytest.mark.parametrize("target", ["paused", "completed"])
def test_any_status_may_move_to_paused_or_completed(api, source_status, target):
    victim = next(
        c for c in api.walk("/v1/campaigns", "campaigns", limit=100) if c["status"] == source_status
    )
    response = api.patch(f"/v1/campaigns/{victim['id']}", json={"status": target})
    assert response.status_code == 200 and response.json()["campaign"]["status"] == target


def test_a_completed_campaign_does_not_move_back(api):
    api.patch("/v1/campaigns/cmp_acme_005", json={"status": "completed"})
    response = api.patch("/v1/campaigns/cmp_acme_005", json={"status": "active"})
    assert (
        response.status_code == 409 and response.json()["details"]["reason"] == "campaign_completed"
    )


def test_editor_may_pause_and_complete_in_a_locked_workspace_but_change_nothing_else(api, control):
    control.governance(agentConfigLocked=True)
    assert (
        api.patch("/v1/campaigns/cmp_acme_002", json={"status": "paused"}, key="editor").status_code
        == 200
    )
    assert (
        api.patch(
            "/v1/campaigns/cmp_acme_004", json={"status": "completed"}, key="editor"
        ).status_code
        == 200
    )
    refused = api.patch("/v1/campaigns/cmp_acme_002", json={"title": "Renamed"}, key="editor")
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"
    assert (
        api.patch("/v1/campaigns/cmp_acme_002", json={"title": "Renamed"}, key="admin").status_code
        == 200
    )


def test_campaign_patch_account_ids_must_exist(api):
    response = api.patch("/v1/campaigns/cmp_acme_002", json={"connectedAccountIds": ["acc_nope"]})
    assert response.status_code == 404


def test_hidden_campaigns_are_not_found(api):
    assert api.patch("/v1/campaigns/cmp_acme_065", json={"status": "paused"}).status_code == 404
