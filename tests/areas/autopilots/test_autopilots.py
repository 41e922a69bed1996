"""Autopilots: configuration, runs on the clock, checkpoints, pausing, retries and caps."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.automation import (
    AUTOPILOT_DEFAULTS,
    ENABLED,
    FAILED_RUN,
    PAUSED,
    WAITING_RUN,
    autopilot,
    error_of,
    outcome,
    run_of,
    runs_of,
    save,
    start_run,
    started,
)

# -- configuration ---------------------------------------------------------------------------


def test_a_channel_that_never_saved_answers_the_defaults(api):
    assert autopilot(api, "chn_code_daily") == {
        "channelId": "chn_code_daily",
        **AUTOPILOT_DEFAULTS,
        "nextScheduledRunAt": None,
        "updatedAt": None,
    }
    assert AUTOPILOT_DEFAULTS["enabled"] is False
    assert AUTOPILOT_DEFAULTS["maxVideosPerDay"] == 3 and AUTOPILOT_DEFAULTS["maxPostsPerDay"] == 12


def test_unknown_and_foreign_channels_are_not_found(api):
    error_of(api.get("/v1/autopilots/chn_nope"), 404, "not_found")
    error_of(api.get("/v1/autopilots/chn_globex_main"), 404, "not_found")
    error_of(save(api, "chn_globex_main", enabled=True), 404, "not_found")
    error_of(start_run(api, "chn_globex_main"), 404, "not_found")
    error_of(api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve", key="globex"), 404, "not_found")


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    body=st.fixed_dictionaries(
        {},
        optional={
            "enabled": st.booleans(),
            "maxVideosPerDay": st.integers(0, 50),
            "maxPostsPerDay": st.integers(0, 200),
            "requireApproval": st.booleans(),
            "timezone": st.sampled_from(["UTC", "Europe/Paris", "America/Los_Angeles"]),
        },
    )
)
def test_put_replaces_the_whole_configuration_omitted_fields_take_defaults(api, control, body):
    control.reset()
    saved = save(api, ENABLED, **body)
    assert saved.status_code == 200, saved.text
    got = saved.json()["autopilot"]
    for field, default in AUTOPILOT_DEFAULTS.items():
        assert got[field] == body.get(field, default), field
    assert (got["nextScheduledRunAt"] is None) == (not got["enabled"])
    assert autopilot(api, ENABLED) == got


def test_enabling_schedules_the_next_run_at_six_local_time(api):
    got = save(api, "chn_code_daily", enabled=True, timezone="America/New_York").json()
    assert got["autopilot"]["nextScheduledRunAt"] == "2026-11-20T11:00:00Z"  # 06:00 EST
    got = save(api, "chn_code_daily", enabled=True, timezone="Asia/Tokyo").json()
    assert got["autopilot"]["nextScheduledRunAt"] == "2026-11-20T21:00:00Z"  # 06:00 JST


def test_bad_configurations_are_refused(api):
    error_of(
        save(api, ENABLED, timezone="Nowhere/Atlantis"), 400, "invalid_request", "unknown_timezone"
    )
    error_of(save(api, ENABLED, maxVideosPerDay=-1), 400, "invalid_request")
    error_of(save(api, ENABLED, enabled=True, extra=1), 400, "invalid_request")
    archived = save(api, "chn_retro_games", enabled=True)
    error_of(archived, 400, "invalid_request", "channel_archived")
    assert save(api, "chn_retro_games", enabled=False).status_code == 200
    assert autopilot(api, ENABLED)["maxPostsPerDay"] == 12, "nothing was written"


# -- a run's life ----------------------------------------------------------------------------


def test_a_run_generates_waits_at_its_checkpoint_then_publishes(api, control):
    run = started(api, ENABLED, videos=2)
    assert run["status"] == "queued" and run["trigger"] == "manual" and run["attempts"] == 1
    control.advance(10)
    generating = run_of(api, run["id"])
    assert generating["status"] == "generating" and len(generating["videos"]) == 2
    for video in generating["videos"]:
        job = api.get(f"/v1/jobs/{video['jobId']}").json()["job"]
        assert job["kind"] == "render" and job["status"] in ("queued", "running")
    control.advance(3600)
    waiting = run_of(api, run["id"])
    assert waiting["status"] == "awaiting_approval" and waiting["checkpoint"] == "publish_approval"
    assert waiting["posts"] == []
    control.advance(24 * 3600)
    assert run_of(api, run["id"])["status"] == "awaiting_approval", "a checkpoint waits"
    approved = api.post(f"/v1/autopilot-runs/{run['id']}/approve").json()["run"]
    assert approved["status"] == "publishing" and approved["checkpoint"] is None
    assert [p["status"] for p in approved["posts"]] == ["queued", "queued"]
    assert approved["posts"][0]["scheduledFor"] < approved["posts"][1]["scheduledFor"]
    for post in approved["posts"]:
        job = api.get(f"/v1/jobs/{post['jobId']}").json()["job"]
        assert job["kind"] == "publish" and job["status"] == "queued"
    control.advance(3600)
    done = run_of(api, run["id"])
    assert done["status"] == "completed" and done["completedAt"]
    assert [p["status"] for p in done["posts"]] == ["published", "published"]


def test_without_approval_a_run_goes_straight_to_publishing(api, control):
    assert save(api, "chn_code_daily", enabled=True, requireApproval=False).status_code == 200
    run = started(api, "chn_code_daily")
    control.advance(2 * 3600)
    done = run_of(api, run["id"])
    assert done["status"] == "completed" and done["approvedAt"] is None
    assert [p["status"] for p in done["posts"]] == ["published"]


def test_a_qa_failed_render_is_never_published(api, control):
    run = started(api, ENABLED, videos=2)
    control.advance(10)
    blocked = run_of(api, run["id"])["videos"][0]
    outcome(control, blocked["jobId"], "qa_failed")
    control.advance(3600)
    api.post(f"/v1/autopilot-runs/{run['id']}/approve")
    control.advance(3600)
    done = run_of(api, run["id"])
    assert done["status"] == "completed"
    video = next(v for v in done["videos"] if v["id"] == blocked["id"])
    assert video["status"] == "qa_failed" and video["publishable"] is False and video["note"]
    assert [p["videoId"] for p in done["posts"]] == [done["videos"][1]["id"]]


def test_a_run_whose_every_render_failed_fails_and_retries(api, control):
    run = started(api, ENABLED)
    control.advance(10)
    job_id = run_of(api, run["id"])["videos"][0]["jobId"]
    outcome(control, job_id, "failed")
    control.advance(3600)
    failed = run_of(api, run["id"])
    assert failed["status"] == "failed" and failed["error"]
    error_of(api.post(f"/v1/autopilot-runs/{run['id']}/approve"), 409, "conflict")
    retried = api.post(f"/v1/autopilot-runs/{run['id']}/retry").json()["run"]
    assert retried["trigger"] == "retry" and retried["attempts"] == 2
    assert retried["status"] == "queued" and retried["error"] is None
    control.advance(3600)
    again = run_of(api, run["id"])
    assert again["status"] == "awaiting_approval" and len(again["videos"]) == 2
    assert [v["attempt"] for v in again["videos"]] == [1, 2]


def test_only_failed_runs_retry_and_only_waiting_runs_approve(api):
    error_of(api.post(f"/v1/autopilot-runs/{WAITING_RUN}/retry"), 409, "conflict", "run_not_failed")
    run = started(api, ENABLED)
    approve = api.post(f"/v1/autopilot-runs/{run['id']}/approve")
    error_of(approve, 409, "conflict", "run_not_awaiting_approval")
    error_of(api.post("/v1/autopilot-runs/run_nope/retry"), 404, "not_found")


def test_the_daily_video_cap(api, control):
    # Three a day; the fixture's waiting run made its videos yesterday.
    assert started(api, ENABLED, videos=2)
    refused = error_of(
        start_run(api, ENABLED, videos=2), 409, "conflict", "daily_video_cap_reached"
    )
    assert refused["details"]["remainingToday"] == 1
    assert started(api, ENABLED, videos=1)
    error_of(start_run(api, ENABLED, videos=1), 409, "conflict", "daily_video_cap_reached")
    control.advance(24 * 3600)  # the next day's scheduled run (06:00) made the day's three
    [scheduled] = [r for r in runs_of(api, ENABLED) if r["createdAt"] == "2026-11-21T06:00:00Z"]
    assert scheduled["trigger"] == "scheduled" and scheduled["videosRequested"] == 3
    refused = error_of(start_run(api, ENABLED), 409, "conflict", "daily_video_cap_reached")
    assert refused["details"]["remainingToday"] == 0
    assert save(api, ENABLED, enabled=True, maxVideosPerDay=5).status_code == 200
    assert started(api, ENABLED, videos=2)


def test_posts_beyond_the_daily_cap_move_to_the_next_day(api, control):
    current = autopilot(api, ENABLED)
    saved = save(api, ENABLED, enabled=True, maxPostsPerDay=1, timezone=current["timezone"])
    assert saved.status_code == 200
    approved = api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve").json()["run"]
    first, second = (p["scheduledFor"] for p in approved["posts"])
    assert first.startswith("2026-11-20") and second == "2026-11-21T00:00:00Z"
    control.advance(3600)
    assert [p["status"] for p in run_of(api, WAITING_RUN)["posts"]] == ["published", "queued"]
    control.advance(24 * 3600)
    assert run_of(api, WAITING_RUN)["status"] == "completed"


def test_list_runs_pages_and_filters_by_channel(api):
    mine = [started(api, "chn_money_minute")["id"] for _ in range(3)]
    page = api.get("/v1/autopilot-runs", params={"limit": 2}).json()
    assert len(page["runs"]) == 2 and page["hasMore"] is True and page["nextCursor"]
    walked = [r["id"] for r in api.walk("/v1/autopilot-runs", "runs", limit=2)]
    assert walked == [WAITING_RUN, FAILED_RUN, *mine]
    assert [r["id"] for r in runs_of(api, PAUSED)] == [FAILED_RUN]
    cursor = page["nextCursor"]
    other = api.get("/v1/autopilot-runs", params={"cursor": cursor, "channelId": PAUSED})
    error_of(other, 400, "invalid_request")
    assert api.get("/v1/autopilot-runs", key="globex").json()["runs"] == []


def test_a_run_needs_an_idempotency_key_and_replays(api):
    body = {"channelId": ENABLED}
    error_of(api.post("/v1/autopilot-runs", json=body), 400, "invalid_request")
    first = api.post("/v1/autopilot-runs", json=body, headers={"Idempotency-Key": "run-1"})
    again = api.post("/v1/autopilot-runs", json=body, headers={"Idempotency-Key": "run-1"})
    assert first.json() == again.json() and again.headers["Idempotent-Replayed"] == "true"
    assert len(runs_of(api, ENABLED)) == 2


def test_viewers_read_but_never_run(api):
    assert api.get("/v1/autopilot-runs", key="viewer").status_code == 200
    error_of(start_run(api, ENABLED, key="viewer"), 403, "forbidden")
    error_of(api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve", key="viewer"), 403, "forbidden")
    assert started(api, ENABLED, key="editor")["status"] == "queued"


# -- pausing ---------------------------------------------------------------------------------


def pause(api, channel_id: str = ENABLED) -> None:
    current = autopilot(api, channel_id)
    keep = {k: current[k] for k in ("maxVideosPerDay", "maxPostsPerDay", "requireApproval")}
    response = save(api, channel_id, enabled=False, timezone=current["timezone"], **keep)
    assert response.status_code == 200


def enable(api, channel_id: str = ENABLED) -> None:
    current = autopilot(api, channel_id)
    keep = {k: current[k] for k in ("maxVideosPerDay", "maxPostsPerDay", "requireApproval")}
    response = save(api, channel_id, enabled=True, timezone=current["timezone"], **keep)
    assert response.status_code == 200


def test_a_paused_autopilot_refuses_runs_approvals_and_retries_until_enabled(api, control):
    failed = started(api, ENABLED)
    control.advance(10)
    outcome(control, run_of(api, failed["id"])["videos"][0]["jobId"], "failed", immediately=True)
    pause(api)
    for response in (
        start_run(api, ENABLED),
        api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve"),
        api.post(f"/v1/autopilot-runs/{failed['id']}/retry"),
    ):
        error_of(response, 409, "conflict", "autopilot_paused")
    control.advance(3 * 24 * 3600)
    assert run_of(api, WAITING_RUN)["status"] == "awaiting_approval", "the checkpoint keeps waiting"
    enable(api)
    assert api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve").json()["run"]["status"] == (
        "publishing"
    )
    assert api.post(f"/v1/autopilot-runs/{failed['id']}/retry").status_code == 200
    assert started(api, ENABLED)["status"] == "queued"


def test_the_fixture_paused_autopilot_refuses_until_enabled(api):
    assert autopilot(api, PAUSED)["enabled"] is False
    error_of(
        api.post(f"/v1/autopilot-runs/{FAILED_RUN}/retry"), 409, "conflict", "autopilot_paused"
    )
    enable(api, PAUSED)
    retried = api.post(f"/v1/autopilot-runs/{FAILED_RUN}/retry").json()["run"]
    assert retried["attempts"] == 2 and retried["trigger"] == "retry"


def test_scheduled_runs_stop_while_paused_and_resume_when_enabled(api, control):
    assert autopilot(api, ENABLED)["nextScheduledRunAt"] == "2026-11-21T06:00:00Z"
    control.advance(22 * 3600)  # 2026-11-21T07:00Z
    scheduled = [r for r in runs_of(api, ENABLED) if r["trigger"] == "scheduled"]
    assert len(scheduled) == 2 and scheduled[1]["createdAt"] == "2026-11-21T06:00:00Z"
    assert scheduled[1]["videosRequested"] == 3
    assert autopilot(api, ENABLED)["nextScheduledRunAt"] == "2026-11-22T06:00:00Z"
    pause(api)
    assert autopilot(api, ENABLED)["nextScheduledRunAt"] is None
    control.advance(3 * 24 * 3600)
    assert len([r for r in runs_of(api, ENABLED) if r["trigger"] == "scheduled"]) == 2
    enable(api)
    assert autopilot(api, ENABLED)["nextScheduledRunAt"] == "2026-11-25T06:00:00Z"
    control.advance(24 * 3600)
    assert len([r for r in runs_of(api, ENABLED) if r["trigger"] == "scheduled"]) == 3


def test_pausing_leaves_queued_posts_publishing(api, control):
    approved = api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve").json()["run"]
    assert approved["status"] == "publishing"
    pause(api)
    control.advance(3600)
    assert run_of(api, WAITING_RUN)["status"] == "completed"
