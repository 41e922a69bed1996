"""Governance: the agent-configuration lock by role, the kill switch, and an unreadable policy."""

from __future__ import annotations

import pytest

from tests.support.automation import (
    ENABLED,
    PAUSED,
    WAITING_RUN,
    autopilot,
    create_campaign,
    error_of,
    outcome,
    run_of,
    save,
    start_run,
    started,
)

CONFIGURE = {"owner": 200, "admin": 200, "editor": 403, "viewer": 403}


# -- the lock ---------------------------------------------------------------------------------


@pytest.mark.parametrize("key,status", CONFIGURE.items())
def test_locked_create_is_for_owners_and_admins(api, control, key, status):
    control.governance(agentConfigLocked=True)
    response = create_campaign(api, key=key)
    assert response.status_code == status, response.text
    if status == 403:
        assert response.json()["code"] == "forbidden"
        assert len(api.walk("/v1/community-campaigns", "campaigns")) == 2


@pytest.mark.parametrize("key,status", CONFIGURE.items())
def test_locked_community_patch_is_for_owners_and_admins(api, control, key, status):
    control.governance(agentConfigLocked=True)
    for body in ({"name": "Renamed"}, {"status": "paused"}):
        response = api.patch("/v1/community-campaigns/cmp_acme_037", json=body, key=key)
        assert response.status_code == status, response.text
        if status == 403:
            assert response.json()["code"] == "forbidden"


@pytest.mark.parametrize("key,status", CONFIGURE.items())
def test_locked_autopilot_put_is_for_owners_and_admins(api, control, key, status):
    control.governance(agentConfigLocked=True)
    response = save(api, ENABLED, key=key, enabled=True, maxVideosPerDay=5)
    assert response.status_code == status, response.text
    if status == 403:
        assert response.json()["code"] == "forbidden"
        assert autopilot(api, ENABLED)["maxVideosPerDay"] == 3


def test_an_editor_may_pause_a_locked_autopilot_but_nothing_more(api, control):
    control.governance(agentConfigLocked=True)
    current = autopilot(api, ENABLED)
    settings = {k: current[k] for k in ("maxVideosPerDay", "maxPostsPerDay", "requireApproval")}
    settings["timezone"] = current["timezone"]
    error_of(save(api, ENABLED, key="editor", enabled=False, maxPostsPerDay=1), 403, "forbidden")
    error_of(save(api, ENABLED, key="editor", enabled=True, **settings), 403, "forbidden")
    paused = save(api, ENABLED, key="editor", enabled=False, **settings)
    assert paused.status_code == 200, paused.text
    assert paused.json()["autopilot"] == {
        **current,
        "enabled": False,
        "nextScheduledRunAt": None,
        "updatedAt": paused.json()["autopilot"]["updatedAt"],
    }
    error_of(save(api, ENABLED, key="editor", enabled=True, **settings), 403, "forbidden")
    error_of(save(api, ENABLED, key="viewer", enabled=False, **settings), 403, "forbidden")
    assert save(api, ENABLED, key="admin", enabled=True, **settings).status_code == 200


def test_an_editor_pauses_a_default_autopilot_with_enabled_false_alone(api, control):
    control.governance(agentConfigLocked=True)
    assert save(api, "chn_code_daily", key="editor", enabled=False).status_code == 200
    assert save(api, "chn_code_daily", key="editor").status_code == 200  # omitted enabled: false


def test_editors_may_still_pause_and_complete_community_campaigns_in_the_campaigns_list(
    api, control
):
    control.governance(agentConfigLocked=True)
    paused = api.patch("/v1/campaigns/cmp_acme_037", json={"status": "paused"}, key="editor")
    assert paused.status_code == 200 and paused.json()["campaign"]["status"] == "paused"
    done = api.patch("/v1/campaigns/cmp_acme_037", json={"status": "completed"}, key="editor")
    assert done.status_code == 200 and done.json()["campaign"]["status"] == "completed"
    renamed = api.patch("/v1/campaigns/cmp_acme_037", json={"title": "x"}, key="editor")
    error_of(renamed, 403, "forbidden")


def test_the_locked_fixture_workspace_lets_its_owner_configure(api):
    response = api.post(
        "/v1/community-campaigns",
        json={
            "name": "Globex forum",
            "connectedAccountId": "acc_globex_forum",
            "objective": "Widgets.",
            "keywords": ["widgets"],
        },
        headers={"Idempotency-Key": "globex-1"},
        key="globex",
    )
    assert response.status_code == 200, response.text
    assert save(api, "chn_globex_main", key="globex", enabled=True).status_code == 200


def test_an_unlocked_workspace_lets_editors_configure(api):
    assert create_campaign(api, key="editor").status_code == 200
    assert save(api, ENABLED, key="editor", enabled=True, maxPostsPerDay=3).status_code == 200


@pytest.mark.parametrize("key", ["owner", "editor"])
def test_an_unreadable_lock_answers_503_to_every_configuration_call(api, control, key):
    control.governance(policyReadable=False)
    for response in (
        create_campaign(api, key=key),
        api.patch("/v1/community-campaigns/cmp_acme_037", json={"name": "x"}, key=key),
        save(api, ENABLED, key=key, enabled=False),
    ):
        error_of(response, 503, "upstream_unavailable")
        assert int(response.headers["Retry-After"]) > 0
    control.governance(policyReadable=True)
    assert create_campaign(api, key=key).status_code == 200, "the same request, retried"


# -- kill switch and unreadable policy on runs ------------------------------------------------


def failed_run(api, control) -> str:
    run = started(api, ENABLED)
    control.advance(10)
    for video in run_of(api, run["id"])["videos"]:
        outcome(control, video["jobId"], "failed", immediately=True)
    assert run_of(api, run["id"])["status"] == "failed"
    return run["id"]


def test_the_kill_switch_refuses_manual_runs_approvals_and_retries(api, control):
    failed = failed_run(api, control)
    control.governance(killSwitch=True)
    for response in (
        start_run(api, ENABLED),
        api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve"),
        api.post(f"/v1/autopilot-runs/{failed}/retry"),
    ):
        error_of(response, 409, "conflict", "governance_kill_switch")
    assert run_of(api, WAITING_RUN)["status"] == "awaiting_approval"
    assert run_of(api, failed)["status"] == "failed"
    control.governance(killSwitch=False)
    assert api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve").status_code == 200
    assert api.post(f"/v1/autopilot-runs/{failed}/retry").status_code == 200


def test_an_unreadable_policy_answers_503_with_retry_after_on_runs(api, control):
    failed = failed_run(api, control)
    control.governance(policyReadable=False)
    headers = {"Idempotency-Key": "run-retried"}
    first = api.post("/v1/autopilot-runs", json={"channelId": ENABLED}, headers=headers)
    for response in (
        first,
        api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve"),
        api.post(f"/v1/autopilot-runs/{failed}/retry"),
    ):
        error_of(response, 503, "upstream_unavailable")
        assert int(response.headers["Retry-After"]) > 0
    control.governance(policyReadable=True)
    again = api.post("/v1/autopilot-runs", json={"channelId": ENABLED}, headers=headers)
    assert again.status_code == 200, "a failed call does not hold its key: the retry runs"
    assert "Idempotent-Replayed" not in again.headers


def test_the_kill_switch_is_checked_before_a_paused_autopilot(api, control):
    control.governance(killSwitch=True)
    error_of(start_run(api, PAUSED), 409, "conflict", "governance_kill_switch")
    control.governance(killSwitch=False)
    error_of(start_run(api, PAUSED), 409, "conflict", "autopilot_paused")


def test_the_kill_switch_skips_scheduled_runs(api, control):
    control.governance(killSwitch=True)
    control.advance(30 * 3600)
    scheduled = [r for r in run_of_all(api) if r["trigger"] == "scheduled"]
    assert [r["id"] for r in scheduled] == [WAITING_RUN]
    control.governance(killSwitch=False)
    control.advance(24 * 3600)
    assert len([r for r in run_of_all(api) if r["trigger"] == "scheduled"]) == 2


def run_of_all(api) -> list[dict]:
    return api.walk("/v1/autopilot-runs", "runs", limit=100)
