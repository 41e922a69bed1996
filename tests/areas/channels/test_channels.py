"""Channels behave as the interface document says."""

from __future__ import annotations

import pytest


def channel(api, channel_id: str) -> dict:
    return next(c for c in api.walk("/v1/channels", "channels") if c["id"] == channel_id)


def test_channel_patch_changes_only_the_fields_sent(api):
    before = channel(api, "chn_money_minute")
    after = api.patch("/v1/channels/chn_money_minute", json={"niche": "budgeting"}).json()[
        "channel"
    ]
    assert after["niche"] == "budgeting"
    for field in ("name", "description", "accentColor", "voicePreset", "products", "enabled"):
        assert after[field] == before[field]
    assert channel(api, "chn_money_minute") == after


def test_channel_products_keep_nothing_bound_and_promotes_nothing_apart(api):
    empty = api.patch("/v1/channels/chn_code_daily", json={"products": []}).json()["channel"]
    none = api.patch("/v1/channels/chn_lens_notes", json={"products": ["none"]}).json()["channel"]
    assert empty["products"] == [] and none["products"] == ["none"]
    assert channel(api, "chn_code_daily")["products"] == []
    assert channel(api, "chn_lens_notes")["products"] == ["none"]


def test_channel_products_must_exist_in_the_workspace(api):
    before = channel(api, "chn_money_minute")
    for products in (["prd_does_not_exist"], ["prd_budget_planner", "prd_globex_widget"]):
        response = api.patch(
            "/v1/channels/chn_money_minute", json={"products": products, "niche": "x"}
        )
        assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert channel(api, "chn_money_minute") == before, "nothing half-written"


@pytest.mark.parametrize(
    "products", [["none", "prd_budget_planner"], ["none", "none"], [""], ["x" * 41]]
)
def test_channel_products_union_is_enforced(api, products):
    response = api.patch("/v1/channels/chn_money_minute", json={"products": products})
    assert response.status_code == 400


def test_enabled_false_archives_and_there_is_no_delete(api):
    archived = api.patch("/v1/channels/chn_deep_work", json={"enabled": False}).json()["channel"]
    assert archived["enabled"] is False and archived["archivedAt"] is not None
    assert channel(api, "chn_deep_work")["enabled"] is False
    gone = api.delete("/v1/channels/chn_deep_work")
    assert gone.status_code == 404
    restored = api.patch("/v1/channels/chn_deep_work", json={"enabled": True}).json()["channel"]
    assert restored["enabled"] is True and restored["archivedAt"] is None


def test_empty_channel_patch_is_refused(api):
    assert api.patch("/v1/channels/chn_deep_work", json={}).status_code == 400
