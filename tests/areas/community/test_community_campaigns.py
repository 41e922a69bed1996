"""Community campaigns: create, list, read, PATCH, their general campaign view and their agent."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.automation import (
    CAP_DEFAULTS,
    FORUM,
    campaign_body,
    community,
    create_campaign,
    created,
    error_of,
    listed_campaign,
)

NAMED_FIELDS = {
    "id", "name", "connectedAccountId", "objective", "keywords", "targetCommunities", "caps",
    "autoReplyOurPosts", "createdAt", "updatedAt", "agentId", "brandBrainId", "offerUrl",
    "smartLinkId", "negativeKeywords", "accountReadiness", "activity", "weeklyPlan", "metrics",
    "marketingCampaignId", "marketingLibraryVersion", "marketingManifest",
}  # fmt: skip


# -- create ----------------------------------------------------------------------------------


def test_create_answers_every_named_field_and_the_agent(api):
    body = created(
        api,
        offerUrl="https://shop.acme.example/budget-planner",
        brandBrainId="bb_acme_money",
        negativeKeywords=["crypto"],
        alertEmail="alerts@acme.example",
        caps={"maxPostsPerDay": 2},
    )
    campaign, agent = body["campaign"], body["agent"]
    assert set(campaign) >= NAMED_FIELDS
    assert campaign["connectedAccountId"] == FORUM and campaign["status"] == "active"
    assert campaign["caps"] == {**CAP_DEFAULTS, "maxPostsPerDay": 2}
    assert campaign["smartLinkId"] and campaign["brandBrainId"] == "bb_acme_money"
    assert campaign["accountReadiness"]["ready"] is True
    assert campaign["targetCommunities"][0]["status"] == "approved"
    assert agent == {
        "id": campaign["agentId"],
        "kind": "community",
        "status": "active",
        "reviewMode": "review-first",
        "campaignId": campaign["id"],
        "createdAt": campaign["createdAt"],
    }
    assert community(api, campaign["id"]) == campaign


def test_caps_defaults_come_from_the_contract(api):
    assert created(api)["campaign"]["caps"] == CAP_DEFAULTS


@pytest.mark.parametrize(
    "account,status,reason",
    [
        ("acc_nope", 404, None),
        ("acc_globex_forum", 404, None),  # another workspace's account: exactly like a missing one
        ("acc_acme_microblog", 400, "account_not_community_forum"),
        ("acc_acme_shortvideo", 400, "account_not_community_forum"),
        ("acc_acme_longvideo", 400, "account_not_community_forum"),
        ("acc_acme_listing", 400, "account_not_community_forum"),
        ("acc_acme_forum_old", 400, "account_not_connected"),
    ],
)
def test_refused_accounts_create_nothing(api, account, status, reason):
    code = "not_found" if status == 404 else "invalid_request"
    error_of(create_campaign(api, connectedAccountId=account), status, code, reason)
    ids = {c["id"] for c in api.walk("/v1/community-campaigns", "campaigns")}
    assert ids == {"cmp_acme_037", "cmp_acme_013"}


def test_an_idempotency_key_is_required_and_a_retry_makes_one_campaign(api):
    error_of(api.post("/v1/community-campaigns", json=campaign_body()), 400, "invalid_request")
    headers = {"Idempotency-Key": "community-1"}
    first = api.post("/v1/community-campaigns", json=campaign_body(), headers=headers)
    again = api.post("/v1/community-campaigns", json=campaign_body(), headers=headers)
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json() and again.headers["Idempotent-Replayed"] == "true"
    assert len(api.walk("/v1/community-campaigns", "campaigns")) == 3


def test_an_unknown_time_zone_is_refused(api):
    response = create_campaign(api, schedule={"timezone": "Mars/Olympus_Mons"})
    error_of(response, 400, "invalid_request", "unknown_timezone")


def test_other_workspaces_campaigns_are_not_found(api):
    campaign = created(api)["campaign"]
    error_of(api.get(f"/v1/community-campaigns/{campaign['id']}", key="globex"), 404, "not_found")
    patched = api.patch(
        f"/v1/community-campaigns/{campaign['id']}", json={"name": "x"}, key="globex"
    )
    error_of(patched, 404, "not_found")
    assert api.get("/v1/community-campaigns", key="globex").json()["campaigns"] == []


def test_list_pages_oldest_first(api):
    mine = [created(api, name=f"Campaign {i}")["campaign"]["id"] for i in range(3)]
    first = api.get("/v1/community-campaigns", params={"limit": 2}).json()
    assert [c["id"] for c in first["campaigns"]] == ["cmp_acme_037", "cmp_acme_013"]
    assert first["hasMore"] is True
    walked = [c["id"] for c in api.walk("/v1/community-campaigns", "campaigns", limit=2)]
    assert walked == ["cmp_acme_037", "cmp_acme_013", *mine]


# -- PATCH -----------------------------------------------------------------------------------

PATCHES = st.fixed_dictionaries(
    {},
    optional={
        "name": st.text("abcdef ", min_size=1, max_size=20),
        "objective": st.text("abcdef ", min_size=1, max_size=40),
        "keywords": st.lists(
            st.sampled_from(["focus", "deep work", "habits"]), min_size=1, max_size=5
        ),
        "negativeKeywords": st.lists(st.sampled_from(["crypto", "spam"]), max_size=2),
        "caps": st.fixed_dictionaries(
            {}, optional={"maxPostsPerDay": st.integers(0, 9), "promoRatioPct": st.integers(0, 100)}
        ),
        "schedule": st.fixed_dictionaries({}, optional={"everyNHours": st.integers(1, 24)}),
        "autoReplyOurPosts": st.booleans(),
        "alertEmail": st.just("team@acme.example"),
        "brandBrainId": st.one_of(st.none(), st.just("bb_new")),
        "offerUrl": st.one_of(st.none(), st.just("https://apps.acme.example/focus-pro")),
        "status": st.sampled_from(["active", "paused"]),
    },
).filter(bool)
# What a change of a field may also change (derived from it).
DERIVED = {
    "keywords": {"targetCommunities"},
    "negativeKeywords": {"targetCommunities"},
    "offerUrl": {"smartLinkId"},
    "caps": {"weeklyPlan"},
    "schedule": {"weeklyPlan"},
    "autoReplyOurPosts": {"activity"},
}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(changes=PATCHES)
def test_patch_changes_only_the_fields_sent(api, control, changes):
    control.reset()
    before = community(api, "cmp_acme_037")
    response = api.patch("/v1/community-campaigns/cmp_acme_037", json=changes)
    assert response.status_code == 200, response.text
    after = response.json()["campaign"]
    may_change = {"updatedAt", *changes}
    for field in changes:
        may_change |= DERIVED.get(field, set())
    for field in set(before) - may_change:
        assert after[field] == before[field], field
    for field, value in changes.items():
        expected = {**before[field], **value} if field in ("caps", "schedule") else value
        assert after[field] == expected, field
    if "autoReplyOurPosts" in changes:
        scope = "own_posts_only" if changes["autoReplyOurPosts"] else "off"
        assert after["activity"]["autoReplyScope"] == scope
    assert community(api, "cmp_acme_037") == after


def test_patch_keywords_keeps_known_target_statuses(api):
    before = {t["name"]: t for t in community(api, "cmp_acme_037")["targetCommunities"]}
    body = {"keywords": ["productivity systems", "note taking"], "negativeKeywords": []}
    after = api.patch("/v1/community-campaigns/cmp_acme_037", json=body).json()["campaign"]
    targets = {t["name"]: t for t in after["targetCommunities"]}
    assert set(targets) == {"c/productivity_systems", "c/note_taking"}
    assert targets["c/productivity_systems"]["status"] == before["c/productivity_systems"]["status"]


def test_pausing_pauses_the_agent(api):
    paused = api.patch("/v1/community-campaigns/cmp_acme_037", json={"status": "paused"})
    assert paused.json()["campaign"]["status"] == "paused"
    assert listed_campaign(api, "cmp_acme_037")["status"] == "paused"


def test_empty_and_unknown_patches_are_refused(api):
    error_of(api.patch("/v1/community-campaigns/cmp_acme_037", json={}), 400, "invalid_request")
    moved = api.patch("/v1/community-campaigns/cmp_acme_037", json={"connectedAccountId": FORUM})
    error_of(moved, 400, "invalid_request")
    error_of(api.patch("/v1/community-campaigns/cmp_nope", json={"name": "x"}), 404, "not_found")


# -- the general campaign view ---------------------------------------------------------------


def test_community_campaigns_are_listed_among_all_campaigns(api):
    campaign = created(api, caps={"maxActionsPerDay": 30})["campaign"]
    general = listed_campaign(api, campaign["id"])
    assert general["source"] == "community" and general["automationMode"] == "review-first"
    assert general["platforms"] == ["community"] and general["connectedAccountIds"] == [FORUM]
    assert general["title"] == campaign["name"] and general["description"] == campaign["objective"]
    assert general["status"] == "active" and general["agentId"] == campaign["agentId"]
    assert general["caps"] == {"maxPostsPerDay": 3, "maxActionsPerDay": 30}
    sources = {c["source"] for c in api.walk("/v1/campaigns", "campaigns", limit=100)}
    assert sources == {"api", "agent", "community"}
    active = api.walk("/v1/campaigns", "campaigns", limit=100, status="active")
    assert campaign["id"] in {c["id"] for c in active}


def test_fixture_community_campaigns_are_their_campaigns_of_the_same_id(api):
    for campaign_id in ("cmp_acme_037", "cmp_acme_013"):
        record, general = community(api, campaign_id), listed_campaign(api, campaign_id)
        assert general["source"] == "community" and general["title"] == record["name"]
        assert general["status"] == record["status"]


def test_the_two_views_stay_consistent_both_ways(api):
    campaign_id = created(api)["campaign"]["id"]
    patched = api.patch(
        f"/v1/community-campaigns/{campaign_id}",
        json={"name": "Renamed", "objective": "New objective", "caps": {"maxPostsPerDay": 5}},
    ).json()["campaign"]
    general = listed_campaign(api, campaign_id)
    assert (general["title"], general["description"]) == ("Renamed", "New objective")
    assert general["caps"]["maxPostsPerDay"] == 5 and general["updatedAt"] == patched["updatedAt"]
    response = api.patch(
        f"/v1/campaigns/{campaign_id}",
        json={"title": "From the campaigns list", "status": "paused", "playbookId": "pb_x"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["campaign"] == listed_campaign(api, campaign_id)
    record = community(api, campaign_id)
    assert record["name"] == "From the campaigns list" and record["status"] == "paused"
    assert record["objective"] == "New objective", "only the fields sent change"


def test_completing_through_the_campaigns_list(api):
    campaign_id = created(api)["campaign"]["id"]
    done = api.patch(f"/v1/campaigns/{campaign_id}", json={"status": "completed"})
    assert done.json()["campaign"]["status"] == "completed"
    record = community(api, campaign_id)
    assert record["status"] == "paused" and record["completedAt"]
    resumed = api.patch(f"/v1/community-campaigns/{campaign_id}", json={"status": "active"})
    error_of(resumed, 400, "invalid_request", "campaign_completed")
    back = api.patch(f"/v1/campaigns/{campaign_id}", json={"status": "active"})
    error_of(back, 409, "conflict", "campaign_completed")


@pytest.mark.parametrize(
    "change,status,reason",
    [
        ({"platforms": ["blog"]}, 400, "community_campaign_field"),
        ({"connectedAccountIds": ["acc_acme_forum_support"]}, 400, "community_campaign_field"),
        ({"automationMode": "fire-and-forget"}, 400, "community_campaign_field"),
        ({"schedule": {"timezone": "UTC"}}, 400, "community_campaign_field"),
        ({"status": "draft"}, 409, "community_campaign_status"),
        ({"title": "x" * 150}, 400, "community_campaign_bounds"),
        ({"description": ""}, 400, "community_campaign_bounds"),
    ],
)
def test_general_patches_that_do_not_fit_a_community_campaign(api, change, status, reason):
    before = community(api, "cmp_acme_037")
    code = "conflict" if status == 409 else "invalid_request"
    error_of(api.patch("/v1/campaigns/cmp_acme_037", json=change), status, code, reason)
    assert community(api, "cmp_acme_037") == before


def test_unchanged_fixed_fields_are_accepted(api):
    response = api.patch(
        "/v1/campaigns/cmp_acme_037",
        json={"platforms": ["community"], "automationMode": "review-first", "status": "paused"},
    )
    assert response.status_code == 200 and response.json()["campaign"]["status"] == "paused"


# -- the agent on the clock ------------------------------------------------------------------


def recent(campaign: dict) -> list[dict]:
    return campaign["activity"]["recent"]


def test_auto_replies_only_ever_answer_comments_on_the_campaigns_own_posts(api, control):
    campaign_id = created(api, autoReplyOurPosts=True)["campaign"]["id"]
    control.advance(8 * 3600)
    drafted = community(api, campaign_id)["activity"]
    assert drafted["autoReplyScope"] == "own_posts_only"
    assert drafted["posts"] == 0 and drafted["autoReplies"] == 0, "nothing published unreviewed"
    assert drafted["pendingReview"] == drafted["pendingPosts"] + drafted["pendingReplies"] > 0
    control.call("POST", f"/community-campaigns/{campaign_id}/review", {"posts": 1})
    control.advance(12 * 3600)
    activity = community(api, campaign_id)["activity"]
    assert activity["posts"] == 1 and activity["autoReplies"] > 0
    assert activity["autoReplyTargets"] == {
        "ownPostComments": activity["autoReplies"],
        "otherComments": 0,
    }
    autos = [e for e in activity["recent"] if e["action"] == "auto_reply"]
    assert autos and all(e["target"] == "own_post_comment" for e in autos)
    threads = [e for e in activity["recent"] if e["target"] == "thread"]
    assert threads and all(e["action"] == "draft_reply" for e in threads)


def test_without_auto_replies_comments_on_own_posts_wait_for_review(api, control):
    campaign_id = created(api)["campaign"]["id"]
    assert community(api, campaign_id)["activity"]["autoReplyScope"] == "off"
    control.advance(4 * 3600)
    control.call("POST", f"/community-campaigns/{campaign_id}/review", {})
    control.advance(12 * 3600)
    activity = community(api, campaign_id)["activity"]
    assert activity["autoReplies"] == 0
    assert any(
        e["action"] == "draft_reply" and e["target"] == "own_post_comment"
        for e in activity["recent"]
    )


def test_the_fixture_agent_answers_its_own_posts_on_the_clock(api, control):
    before = community(api, "cmp_acme_037")
    control.advance(24 * 3600)
    after = community(api, "cmp_acme_037")
    assert after["activity"]["autoReplies"] > before["activity"]["autoReplies"]
    assert after["metrics"]["impressions"] > before["metrics"]["impressions"]
    assert after["activity"]["autoReplyTargets"]["otherComments"] == 0


def test_a_paused_agent_and_the_kill_switch_stop_the_activity(api, control):
    paused = community(api, "cmp_acme_013")
    control.advance(48 * 3600)
    assert community(api, "cmp_acme_013")["activity"] == paused["activity"]
    control.governance(killSwitch=True)
    before = community(api, "cmp_acme_037")["activity"]
    control.advance(48 * 3600)
    assert community(api, "cmp_acme_037")["activity"] == before
