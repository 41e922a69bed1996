"""Every generation kind runs as a job on the mock clock: terminal within an hour, in order."""

from __future__ import annotations

import pytest

from tests.support.generation import (
    CALLBACK_URL,
    HOUR,
    PROJECT,
    REQUESTS,
    SECRET,
    assert_ordered,
    deliveries,
    events,
    job,
    jobs,
    start,
)

# footage edits: tests/areas/generation/test_proposals.py
SIMPLE_KINDS = [kind for kind in REQUESTS if kind != "footage-edit"]


@pytest.mark.parametrize("kind", SIMPLE_KINDS)
def test_every_kind_reaches_done_within_an_hour_and_its_stream_is_in_order(api, control, kind):
    started = start(api, kind)["job"]
    assert started["kind"] == kind
    assert started["projectId"] == PROJECT
    assert started["status"] in ("queued", "running")
    assert started["artifacts"] is None
    control.advance(60)
    midway = job(api, started["id"])
    assert midway["status"] in ("queued", "running")
    control.advance(HOUR - 60)
    done = job(api, started["id"])
    assert done["status"] == "done"
    assert done["error"] is None
    assert done["artifacts"]["download"]
    stream = events(api, started["id"], limit=2)
    assert_ordered(stream)
    assert stream[-1]["status"] == "done"
    assert "job.completed" in [e["event"] for e in stream]
    assert len({e["phase"] for e in stream}) >= 3  # phase is display text that moves on
    assert [e["sequence"] for e in events(api, started["id"], limit=100)] == [
        e["sequence"] for e in stream
    ]


def test_the_job_is_filed_under_its_project_and_listed(api):
    created = start(api, "render")["job"]
    listed = api.get("/v1/jobs", params={"projectId": PROJECT}).json()["jobs"]
    assert created["id"] in [j["id"] for j in listed]
    other = api.get("/v1/jobs", params={"projectId": "prj_acme_02"}).json()["jobs"]
    assert created["id"] not in [j["id"] for j in other]


def test_the_stream_read_past_its_end_is_empty_and_never_goes_backwards(api, control):
    created = start(api, "footage")["job"]
    control.advance(HOUR)
    last = events(api, created["id"])[-1]["sequence"]
    page = api.get(f"/v1/jobs/{created['id']}/events", params={"after": last + 5}).json()
    assert page["events"] == []
    assert page["nextAfter"] == last + 5
    assert page["hasMore"] is False


def test_a_stream_read_while_running_continues_where_it_stopped(api, control):
    created = start(api, "3d-from-text")["job"]
    control.advance(30)
    first = api.get(f"/v1/jobs/{created['id']}/events", params={"after": 0}).json()
    assert first["hasMore"] is False and first["events"]
    control.advance(HOUR)
    rest = api.get(f"/v1/jobs/{created['id']}/events", params={"after": first["nextAfter"]})
    later = rest.json()["events"]
    assert later[0]["sequence"] == first["nextAfter"] + 1
    assert later[-1]["status"] == "done"


@pytest.mark.parametrize(
    ("outcome", "event"),
    [("failed", "job.failed"), ("qa_failed", "job.failed"), ("cancelled", "job.cancelled")],
)
@pytest.mark.parametrize("kind", ["render", "remix", "3d-from-image"])
def test_jobs_that_do_not_finish_done_carry_an_error_and_no_artifacts(
    api, control, kind, outcome, event
):
    created = start(api, kind)["job"]
    control.call("POST", f"/jobs/{created['id']}/outcome", {"status": outcome})
    control.advance(HOUR)
    ended = job(api, created["id"])
    assert ended["status"] == outcome
    assert ended["artifacts"] is None
    assert isinstance(ended["error"], str) and ended["error"]
    stream = events(api, created["id"])
    assert_ordered(stream)
    assert stream[-1]["event"] == event
    assert "artifact.ready" not in [e["event"] for e in stream]


def test_a_done_render_carries_download_and_its_deprecated_copy_video(api, control):
    created = start(api, "render")["job"]
    control.advance(HOUR)
    artifacts = job(api, created["id"])["artifacts"]
    assert artifacts["download"] == artifacts["video"]


def test_an_immediate_outcome_ends_the_job_at_once(api, control):
    created = start(api, "footage")["job"]
    control.call(
        "POST", f"/jobs/{created['id']}/outcome", {"status": "qa_failed", "immediately": True}
    )
    assert job(api, created["id"])["status"] == "qa_failed"


@pytest.mark.parametrize("kind", ["render", "3d-from-text", "3d-from-image"])
def test_a_callback_gets_the_terminal_event_with_artifacts_only_when_done(api, control, kind):
    callback = {"callbackUrl": CALLBACK_URL, "callbackSecret": SECRET}
    done = start(api, kind, **callback)["job"]
    failed = start(api, kind, **callback)["job"]
    control.call("POST", f"/jobs/{failed['id']}/outcome", {"status": "qa_failed"})
    control.advance(HOUR)
    bodies = {
        d["body"]["jobId"]: d["body"] for d in deliveries(control) if d["target"] == "callback"
    }
    ok = bodies[done["id"]]
    assert ok["schemaVersion"] == "job-event.v1"
    assert ok["status"] == "done" and ok["error"] is None
    assert ok["artifacts"]["videoUrl"] == ok["artifacts"]["downloadUrls"]["video"]
    if kind == "render":
        assert ok["artifacts"]["videoUrl"] == job(api, done["id"])["artifacts"]["download"]
    blocked = bodies[failed["id"]]
    assert blocked["status"] == "qa_failed"
    assert blocked["artifacts"] is None and blocked["error"]
    assert SECRET not in str(control.call("GET", "/deliveries"))


def test_renders_and_3d_jobs_never_reach_subscriptions(api, control):
    response = api.post(
        "/v1/webhook-subscriptions",
        json={"url": "https://127.0.0.1:9/hook", "events": ["job.completed", "job.progressed"],
              "secret": SECRET},
        headers={"Idempotency-Key": "sub-1"},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    for kind in ("render", "3d-from-text", "footage"):
        start(api, kind)
    control.advance(HOUR)
    assert [d for d in deliveries(control) if d["target"] == "subscription"] == []
    assert {j["status"] for j in jobs(api)} == {"done"}


def test_a_footage_edit_runs_end_to_end_over_real_http(live):
    api, control = live
    job_id = start(api, "footage-edit")["job"]["id"]
    control.advance(200)
    approved = api.post("/v1/video/edit/approve", json={"jobId": job_id})
    assert approved.status_code == 200, approved.text
    control.advance(HOUR)
    assert job(api, job_id)["status"] == "done"
    assert_ordered(events(api, job_id, limit=1))
