"""Footage-edit proposals: review, paging, first approval, re-cuts and their refusals."""

from __future__ import annotations

import pytest

from tests.support.generation import (
    FOOTAGE,
    HOUR,
    SECRET,
    assert_ordered,
    deliveries,
    events,
    job,
    ledger,
    refused,
    start,
    usage,
)

REVIEW = 200  # seconds after which a default footage edit holds for review


def edit(api, control, **changes) -> str:
    """A footage edit holding for review; its job id."""
    job_id = start(api, "footage-edit", **changes)["job"]["id"]
    control.advance(REVIEW)
    assert job(api, job_id)["status"] == "awaiting_approval"
    return job_id


def approve(api, job_id, **fields):
    return api.post("/v1/video/edit/approve", json={"jobId": job_id, **fields})


def proposal(api, job_id, **params):
    response = api.get(f"/v1/jobs/{job_id}/proposal", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def walk(api, job_id, limit):
    cuts, after = [], 0
    while True:
        page = proposal(api, job_id, after=after, limit=limit)
        cuts.extend(page["proposal"]["cuts"])
        assert len(page["proposal"]["cuts"]) <= limit
        if page["page"]["nextAfter"] is None:
            return cuts, page
        assert page["page"]["nextAfter"] == after + len(page["proposal"]["cuts"])
        after = page["page"]["nextAfter"]


def test_an_edit_holds_for_review_with_job_awaiting_approval(api, control):
    job_id = start(api, "footage-edit")["job"]["id"]
    refused(api.get(f"/v1/jobs/{job_id}/proposal"), 404, "not_found")  # not proposed yet
    control.advance(REVIEW)
    control.advance(HOUR)  # it waits for a person however long it takes
    held = job(api, job_id)
    assert held["status"] == "awaiting_approval"
    assert held["artifacts"] is None
    stream = events(api, job_id)
    assert_ordered(stream)
    assert stream[-1]["event"] == "job.awaiting_approval"
    page = proposal(api, job_id)
    assert page["status"] == page["proposal"]["status"] == "awaiting_review"
    assert page["proposal"]["generation"] == 0
    assert page["proposal"]["renderJobId"] is None


@pytest.mark.parametrize("limit", [1, 7, 50])
def test_cuts_are_paged_by_after_until_next_after_is_null(api, control, limit):
    job_id = edit(api, control)
    cuts, last = walk(api, job_id, limit)
    count = last["proposal"]["cutCount"]
    assert count > 50  # more than one default page
    assert [cut["index"] for cut in cuts] == list(range(count))
    assert {cut["sourceUrl"] for cut in cuts} == set(FOOTAGE)
    assert all(0 <= cut["start"] <= cut["end"] for cut in cuts)
    assert all(cut["end"] <= 40 for cut in cuts if cut["sourceUrl"] == FOOTAGE[1])
    default = proposal(api, job_id)
    assert len(default["proposal"]["cuts"]) == 50 and default["page"]["nextAfter"] == 50
    beyond = proposal(api, job_id, after=count + 3)
    assert beyond["proposal"]["cuts"] == [] and beyond["page"]["nextAfter"] is None


def test_the_same_footage_proposes_the_same_cuts_and_the_target_sets_their_length(api, control):
    first = edit(api, control, targetDurationSeconds=30)
    second = edit(api, control, targetDurationSeconds=30)
    cuts, _ = walk(api, first, 100)
    assert cuts == walk(api, second, 100)[0]
    assert 30 <= sum(cut["end"] - cut["start"] for cut in cuts) < 30 + 5


def test_first_approval_renders_the_edit_to_done(api, control):
    job_id = edit(api, control, callbackUrl="https://127.0.0.1:9/cb", callbackSecret=SECRET)
    response = approve(api, job_id)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["proposal"]["status"] == "approved"
    assert body["proposal"]["generation"] == 0
    assert body["proposal"]["renderJobId"] == body["job"]["id"] == job_id
    assert body["job"]["status"] == "running"
    assert body["cost"]["lines"][0]["capability"] == "video-render"
    assert [e["capability"] for e in usage(api)] == ["video-edit", "video-render"]
    control.advance(HOUR)
    done = job(api, job_id)
    assert done["status"] == "done"
    assert done["cost"] == 120 + 400
    assert done["artifacts"]["download"] == done["artifacts"]["video"]
    stream = [e["event"] for e in events(api, job_id, limit=3)]
    assert stream.index("job.awaiting_approval") < stream.index("job.completed")
    assert stream[-2:] == ["job.completed", "artifact.ready"]
    assert proposal(api, job_id)["status"] == "approved"  # still served once rendered
    [callback] = [d["body"] for d in deliveries(control) if d["target"] == "callback"]
    assert callback["status"] == "done"
    assert callback["artifacts"]["videoUrl"] == done["artifacts"]["download"]


def test_a_re_cut_renders_the_next_generation_and_a_stale_value_conflicts_uncharged(api, control):
    job_id = edit(api, control)
    approve(api, job_id)
    control.advance(HOUR)
    before_cuts, _ = walk(api, job_id, 100)
    recut = approve(api, job_id, expectedGeneration=0)
    assert recut.status_code == 200, recut.text
    body = recut.json()
    assert body["proposal"]["generation"] == 1
    assert body["job"]["kind"] == "edit-render" and body["job"]["id"] != job_id
    assert body["proposal"]["renderJobId"] == body["job"]["id"]
    assert body["cost"]["credits"] == 400
    assert walk(api, job_id, 100)[0] != before_cuts  # a re-cut proposes new cuts
    before = ledger(api)
    details = refused(approve(api, job_id, expectedGeneration=0), 409, "conflict")
    assert details["currentGeneration"] == 1
    assert details["reason"] == "stale_generation"
    assert ledger(api) == before
    control.advance(HOUR)
    rendered = job(api, body["job"]["id"])
    assert rendered["status"] == "done" and rendered["artifacts"]["download"]
    assert_ordered(events(api, rendered["id"]))
    assert approve(api, job_id, expectedGeneration=1).json()["proposal"]["generation"] == 2


def test_approving_an_approved_proposal_without_expected_generation_conflicts(api, control):
    job_id = edit(api, control)
    approve(api, job_id)
    before = ledger(api)
    details = refused(approve(api, job_id), 409, "conflict")
    assert details["currentGeneration"] == 0
    assert ledger(api) == before


def test_expected_generation_before_the_first_approval_is_refused(api, control):
    job_id = edit(api, control)
    before = ledger(api)
    details = refused(approve(api, job_id, expectedGeneration=0), 400, "invalid_request")
    assert details["reason"] == "proposal_not_approved"
    assert ledger(api) == before


@pytest.mark.parametrize(
    ("outcome", "reason"),
    [(None, "render_not_ready"), ("failed", "render_failed"), ("qa_failed", "render_failed"),
     ("cancelled", "cut_cancelled")],
)  # fmt: skip
def test_a_re_cut_of_a_render_not_done_is_refused_before_any_charge(api, control, outcome, reason):
    job_id = edit(api, control)
    approve(api, job_id)
    if outcome is not None:
        control.call("POST", f"/jobs/{job_id}/outcome", {"status": outcome})
        control.advance(HOUR)
    before = ledger(api)
    details = refused(approve(api, job_id, expectedGeneration=0), 400, "invalid_request")
    assert details["reason"] == reason
    assert ledger(api) == before


def test_a_cancelled_or_unready_edit_is_refused_before_any_charge(api, control):
    fresh = start(api, "footage-edit")["job"]["id"]
    before = ledger(api)
    assert refused(approve(api, fresh), 400, "invalid_request")["reason"] == "proposal_not_ready"
    assert ledger(api) == before
    job_id = edit(api, control)
    control.call("POST", f"/jobs/{job_id}/outcome", {"status": "cancelled", "immediately": True})
    before = ledger(api)
    assert refused(approve(api, job_id), 400, "invalid_request")["reason"] == "cut_cancelled"
    details = refused(approve(api, job_id, expectedGeneration=0), 400, "invalid_request")
    assert details["reason"] == "cut_cancelled"
    assert ledger(api) == before
    assert job(api, job_id)["artifacts"] is None


def test_only_footage_edits_have_proposals(api, control):
    render = start(api, "render")["job"]["id"]
    assert refused(api.get(f"/v1/jobs/{render}/proposal"), 404, "not_found")
    refused(approve(api, render), 404, "not_found")
    refused(api.get("/v1/jobs/job_nowhere/proposal"), 404, "not_found")
    job_id = edit(api, control)
    refused(api.get(f"/v1/jobs/{job_id}/proposal", key="globex"), 404, "not_found")
    other = api.post("/v1/video/edit/approve", json={"jobId": job_id}, key="globex")
    refused(other, 404, "not_found")  # another workspace's edit is not there


def test_a_footage_url_the_service_would_not_fetch_is_refused(api):
    before = ledger(api)
    response = api.post(
        "/v1/video/edit",
        json={"projectId": "prj_acme_01", "footageUrls": [FOOTAGE[0], "ftp://cdn.example.net/x"]},
    )
    assert refused(response, 400, "invalid_request")["field"] == "footageUrls/1"
    assert ledger(api) == before


def test_footage_edits_reach_subscriptions_including_awaiting_approval(api, control):
    response = api.post(
        "/v1/webhook-subscriptions",
        json={"url": "https://127.0.0.1:9/hook", "secret": SECRET,
              "events": ["job.awaiting_approval", "job.completed", "artifact.ready"]},
        headers={"Idempotency-Key": "sub-edit"},
    )  # fmt: skip
    assert response.status_code == 200, response.text
    job_id = edit(api, control)
    approve(api, job_id)
    control.advance(HOUR)
    sent = [d["body"] for d in deliveries(control) if d["target"] == "subscription"]
    assert [b["event"] for b in sent] == [
        "job.awaiting_approval",
        "job.completed",
        "artifact.ready",
    ]
    assert {b["data"]["jobId"] for b in sent} == {job_id}
    assert all(b["data"]["resourceUrl"] == f"/v1/jobs/{job_id}" for b in sent)
