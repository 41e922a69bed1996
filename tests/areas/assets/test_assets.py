"""Assets: list (cursor and deprecated after), import with its analysis job, transcripts."""

from __future__ import annotations

import json

import pytest

from conformance.signatures import verify

ASSET_IDS = [f"ast_acme_{n:02d}" for n in range(1, 13)]  # fixture: 12 assets
URL = "https://cdn.example.com/raw/interview-take-2.mp4"
SECRET = "whsec_" + "r" * 34


def import_asset(api, key: str = "imp-1", **body):
    sent = {"url": URL, **body}
    return api.post("/v1/assets/import", json=sent, headers={"Idempotency-Key": key})


def assets(api) -> list[dict]:
    return api.walk("/v1/assets", "assets", limit=100)


# -- list -----------------------------------------------------------------------------------


def test_assets_page_by_cursor_oldest_first(api):
    seen = api.walk("/v1/assets", "assets", limit=5)
    assert [a["id"] for a in seen] == ASSET_IDS
    statuses = {a["id"]: a["status"] for a in seen}
    assert statuses["ast_acme_09"] == "failed" and statuses["ast_acme_01"] == "ready"
    first = api.get("/v1/assets", params={"limit": 5}).json()
    assert first["nextAfter"] == 5 and first["hasMore"] is True


def test_assets_page_by_the_deprecated_after(api):
    seen, after = [], 0
    while after is not None:
        body = api.get("/v1/assets", params={"limit": 5, "after": after}).json()
        seen.extend(a["id"] for a in body["assets"])
        after = body["nextAfter"]
    assert seen == ASSET_IDS
    tail = api.get("/v1/assets", params={"after": 10}).json()
    assert [a["id"] for a in tail["assets"]] == ASSET_IDS[10:] and tail["nextAfter"] is None


def test_a_cursor_wins_over_after_on_assets(api):
    first = api.get("/v1/assets", params={"limit": 4}).json()
    both = api.get("/v1/assets", params={"limit": 4, "after": 0, "cursor": first["nextCursor"]})
    assert both.status_code == 200, both.text
    assert [a["id"] for a in both.json()["assets"]] == ASSET_IDS[4:8]
    assert both.json()["nextAfter"] == 8


def test_other_workspaces_see_their_own_assets(api):
    body = api.get("/v1/assets", key="globex").json()
    assert body["assets"] == [] and body["nextCursor"] is None and body["nextAfter"] is None


# -- import ---------------------------------------------------------------------------------


def test_import_requires_an_idempotency_key_before_any_charge(api, control):
    response = api.post("/v1/assets/import", json={"url": URL})
    assert response.status_code == 400 and response.json()["code"] == "invalid_request"
    assert control.credits() == 10000
    assert len(assets(api)) == 12


def test_import_charges_creates_an_analysing_asset_and_its_job(api, control):
    response = import_asset(api, projectId="prj_acme_02")
    assert response.status_code == 200, response.text
    body = response.json()
    asset, job, cost = body["asset"], body["job"], body["cost"]
    assert asset["status"] == "analysing" and asset["analysisJobId"] == job["id"]
    assert asset["title"] == "interview-take-2.mp4" and asset["mediaType"] == "video"
    assert asset["sourceUrl"] == URL and asset["projectId"] == "prj_acme_02"
    assert asset["durationSeconds"] is None
    assert job["kind"] == "media-analysis" and job["status"] == "queued"
    assert cost["credits"] == 40 and cost["lines"][0]["capability"] == "media-analysis"
    assert control.credits() == 10000 - 40 == cost["balance"]
    assert [a["id"] for a in assets(api)][-1] == asset["id"]


def test_an_idempotent_retry_charges_once_and_creates_one_asset(api, control):
    first = import_asset(api, key="same", title="Take two")
    again = import_asset(api, key="same", title="Take two")
    assert first.json() == again.json() and again.headers["Idempotent-Replayed"] == "true"
    assert control.credits() == 9960
    assert len(assets(api)) == 13
    reused = import_asset(api, key="same", title="Another")
    assert reused.status_code == 409


def test_import_short_of_credits_answers_402_and_creates_nothing(api, control):
    control.credits(balance=39)
    response = import_asset(api)
    assert response.status_code == 402
    body = response.json()
    assert body["code"] == "insufficient_credits"
    assert body["details"]["price"] == 40 and body["details"]["shortfall"] == 1
    assert len(assets(api)) == 12 and control.credits() == 39
    control.credits(balance=40)
    assert import_asset(api).status_code == 200, "a failed call does not hold its key"


@pytest.mark.parametrize(
    "body",
    [
        {"url": "https://169.254.169.254/latest/meta-data"},
        {"url": "ftp://cdn.example.com/a.mp4"},
        {"url": "not a url"},
        {"url": URL, "title": ""},
        {"url": URL, "colour": "red"},
        {},
    ],
)
def test_bad_imports_are_refused_before_any_charge(api, control, body):
    response = api.post("/v1/assets/import", json=body, headers={"Idempotency-Key": "bad"})
    assert response.status_code == 400, response.text
    assert control.credits() == 10000 and len(assets(api)) == 12


def test_import_into_a_project_the_workspace_does_not_own_answers_404(api, control):
    assert import_asset(api, projectId="prj_globex_01").status_code == 404
    assert control.credits() == 10000 and len(assets(api)) == 12


def test_viewers_may_list_but_not_import(api, control):
    assert api.get("/v1/assets", key="viewer").status_code == 200
    response = api.post(
        "/v1/assets/import", json={"url": URL}, headers={"Idempotency-Key": "v"}, key="viewer"
    )
    assert response.status_code == 403 and control.credits() == 10000


def test_import_is_refused_when_media_analysis_is_unavailable(api, control):
    control.capability("media-analysis", available=False)
    response = import_asset(api)
    assert response.status_code == 503 and response.json()["code"] == "capability_unavailable"
    assert len(assets(api)) == 12


# -- analysis and transcript ----------------------------------------------------------------


def transcript(api, asset_id: str, **params) -> dict:
    response = api.get(f"/v1/assets/{asset_id}/transcript", params=params)
    assert response.status_code == 200, response.text
    return response.json()


def test_the_asset_becomes_ready_when_its_job_is_done_and_its_transcript_pages(api, control):
    asset = import_asset(api).json()["asset"]
    before = transcript(api, asset["id"])
    assert before["segments"] == [] and before["segmentCount"] == 0 and before["nextAfter"] is None
    control.advance(60)
    assert assets(api)[-1]["status"] == "analysing"
    control.advance(3600)
    job = api.get(f"/v1/jobs/{asset['analysisJobId']}").json()["job"]
    ready = assets(api)[-1]
    assert job["status"] == "done" and ready["status"] == "ready"
    assert ready["durationSeconds"] > 0 and ready["updatedAt"] == job["completedAt"]
    total = transcript(api, asset["id"], limit=1)["segmentCount"]
    assert total >= 5
    segments, after = [], 0
    while after is not None:
        page = transcript(api, asset["id"], limit=4, after=after)
        assert page["segmentCount"] == total
        segments.extend(page["segments"])
        after = page["nextAfter"]
    assert [s["index"] for s in segments] == list(range(total))
    assert segments[-1]["end"] == ready["durationSeconds"]
    assert all(s["text"] for s in segments)
    assert transcript(api, asset["id"], after=total + 5)["segments"] == []


def test_the_asset_fails_when_its_job_fails(api, control):
    body = import_asset(api).json()
    control.call("POST", f"/jobs/{body['job']['id']}/outcome", {"status": "failed"})
    control.advance(3600)
    failed = next(a for a in assets(api) if a["id"] == body["asset"]["id"])
    assert failed["status"] == "failed" and failed["durationSeconds"] is None
    assert transcript(api, failed["id"])["segmentCount"] == 0


def test_an_asset_follows_a_job_ended_at_once(api, control):
    body = import_asset(api).json()
    control.call(
        "POST", f"/jobs/{body['job']['id']}/outcome", {"status": "cancelled", "immediately": True}
    )
    assert transcript(api, body["asset"]["id"])["status"] == "failed"


def test_fixture_assets_have_transcripts_and_unknown_assets_404(api):
    page = transcript(api, "ast_acme_01", limit=100)
    assert page["segmentCount"] == 52 and len(page["segments"]) == 52  # 312 s of 6 s segments
    assert page["nextAfter"] is None
    assert transcript(api, "ast_acme_09")["segmentCount"] == 0
    assert api.get("/v1/assets/ast_nope/transcript").status_code == 404
    assert api.get("/v1/assets/ast_acme_01/transcript", key="globex").status_code == 404
    assert api.get("/v1/assets/ast_acme_01/transcript", params={"after": -1}).status_code == 400


def test_media_analysis_events_reach_a_webhook_subscription(api, control, receiver):
    subscription = api.post(
        "/v1/webhook-subscriptions",
        json={
            "url": f"{receiver.url}/automation",
            "events": ["job.progressed", "job.completed"],
            "secret": SECRET,
        },
        headers={"Idempotency-Key": "sub-assets"},
    ).json()["subscription"]
    body = import_asset(api, projectId="prj_acme_03").json()
    job_id = body["job"]["id"]
    control.advance(3600)
    control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
    received = [json.loads(d.body) for d in receiver.deliveries]
    # Attempts run concurrently, so arrival order is free; the sequence orders the events.
    mine = sorted(
        (event for event in received if event["data"]["jobId"] == job_id),
        key=lambda event: event["data"]["sequence"],
    )
    assert [event["event"] for event in mine] == ["job.progressed"] * 3 + ["job.completed"]
    assert [event["data"]["sequence"] for event in mine] == [1, 2, 3, 4]
    assert len({event["eventId"] for event in mine}) == 4
    for delivery in receiver.deliveries:
        if json.loads(delivery.body)["data"]["jobId"] != job_id:
            continue
        headers = delivery.headers
        assert headers["x-service-event"] == json.loads(delivery.body)["event"]
        assert verify(
            SECRET, headers["x-service-timestamp"], delivery.body, headers["x-service-signature"]
        )
        assert headers["x-service-subscription-id"] == subscription["id"]
    completed = mine[-1]
    assert completed["schemaVersion"] == "automation-event.v1"
    assert completed["data"]["projectId"] == "prj_acme_03"
    assert completed["data"]["resourceUrl"] == f"/v1/jobs/{job_id}"
    assert completed["data"]["status"] == "done"
