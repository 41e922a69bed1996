"""Projects, products, channels and campaigns behave as the interface document says."""

from __future__ import annotations

import pytest


def idem(key: str) -> dict[str, str]:
    return {"Idempotency-Key": key}


# -- projects ------------------------------------------------------------------------------


def test_create_project_stores_kind_as_media_type_and_returns_both(api):
    created = api.post(
        "/v1/projects", json={"title": "Old client", "kind": "audio"}, headers=idem("p1")
    )
    assert created.status_code == 200
    project = created.json()["project"]
    assert project["mediaType"] == "audio" and project["kind"] == "audio"
    listed = api.walk("/v1/projects", "projects")
    assert [p for p in listed if p["id"] == project["id"]] == [project]


def test_create_project_with_media_type(api):
    project = api.post(
        "/v1/projects", json={"title": "New", "mediaType": "3d"}, headers=idem("p2")
    ).json()["project"]
    assert (project["mediaType"], project["kind"]) == ("3d", "3d")


def test_media_type_and_kind_that_disagree_are_refused(api):
    response = api.post(
        "/v1/projects",
        json={"title": "x", "mediaType": "video", "kind": "audio"},
        headers=idem("p3"),
    )
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_request"


def test_create_project_requires_an_idempotency_key(api):
    before = len(api.walk("/v1/projects", "projects"))
    response = api.post("/v1/projects", json={"title": "x"})
    assert response.status_code == 400
    error = response.json()
    assert error["code"] == "invalid_request"
    assert {"location": "header", "path": "/Idempotency-Key"}.items() <= error["details"]["errors"][
        0
    ].items()
    assert len(api.walk("/v1/projects", "projects")) == before


# -- products ------------------------------------------------------------------------------


def test_create_product_needs_only_a_name(api):
    product = api.post("/v1/products", json={"name": "Mug"}).json()["product"]
    assert product["name"] == "Mug" and product["id"].startswith("prd_")
    assert product["id"] in {p["id"] for p in api.walk("/v1/products", "products")}


def test_create_product_without_a_name_is_refused(api):
    response = api.post("/v1/products", json={"description": "no name"})
    assert response.status_code == 400
    assert response.json()["details"]["errors"][0]["path"] == "/name"


# -- channels ------------------------------------------------------------------------------


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


# -- campaigns -----------------------------------------------------------------------------


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
