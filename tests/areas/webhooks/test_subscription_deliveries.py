"""Subscriptions receive footage-edit (and media-analysis, publishing) events for the whole
workspace, never renders from POST /v1/video/render nor 3D jobs; each delivery is signed and
carries the job's stream sequence and its resource url."""

from __future__ import annotations

import json

from conformance.signatures import verify
from tests.support.schemas import schema_validator

SECRET = "subscription-secret-" + "z" * 20
JOB_EVENTS = ["job.progressed", "job.awaiting_approval", "job.completed", "artifact.ready",
              "job.failed", "job.cancelled"]  # fmt: skip
FOOTAGE = ["https://videos.example.com/cooking/perfect-rice"]


def subscribe(api, url: str, events: list[str], key: str = "sub") -> dict:
    response = api.post(
        "/v1/webhook-subscriptions",
        json={"url": url, "events": events, "secret": SECRET},
        headers={"Idempotency-Key": key},
    )
    assert response.status_code == 200, response.text
    return response.json()["subscription"]


def flush(control) -> None:
    control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})


def received(receiver) -> list[dict]:
    return [json.loads(d.body) for d in receiver.deliveries]


def test_a_footage_edit_reaches_subscriptions_in_order_and_renders_and_3d_do_not(
    api, control, receiver
):
    subscription = subscribe(api, f"{receiver.url}/all", JOB_EVENTS)
    render = api.post(
        "/v1/video/render", json={"projectId": "prj_acme_01", "story": "A walk."}
    ).json()["job"]
    model = api.post(
        "/v1/3d/from-text", json={"projectId": "prj_acme_01", "prompt": "A chair"}
    ).json()["job"]
    edit = api.post(
        "/v1/video/edit", json={"projectId": "prj_acme_01", "footageUrls": FOOTAGE}
    ).json()["job"]
    control.advance(3600)
    flush(control)
    bodies = received(receiver)
    job_ids = {b["data"]["jobId"] for b in bodies}
    assert job_ids == {edit["id"]}, "renders and 3D jobs never reach subscriptions"
    assert render["id"] not in job_ids and model["id"] not in job_ids
    ordered = sorted(bodies, key=lambda b: b["data"]["sequence"])
    assert [b["data"]["sequence"] for b in ordered] == list(range(1, len(ordered) + 1))
    assert ordered[-1]["event"] == "job.awaiting_approval"
    stream = api.get(f"/v1/jobs/{edit['id']}/events", params={"limit": 100}).json()["events"]
    assert [(e["sequence"], e["event"]) for e in stream] == [
        (b["data"]["sequence"], b["event"]) for b in ordered
    ]
    for delivery, body in zip(receiver.deliveries, bodies, strict=True):
        schema_validator("AutomationEvent").validate(body)
        assert body["data"]["resourceUrl"] == f"/v1/jobs/{edit['id']}"
        assert body["data"]["projectId"] == "prj_acme_01" and body["workspaceId"]
        headers = delivery.headers
        assert (
            headers["x-service-subscription-id"] == subscription["id"]
            and "x-service-job-id" not in headers
        )
        assert (
            headers["x-service-event"] == body["event"]
            and headers["x-service-event-id"] == body["eventId"]
        )
        assert verify(
            SECRET, headers["x-service-timestamp"], delivery.body, headers["x-service-signature"]
        )
    assert len({b["eventId"] for b in bodies}) == len(bodies)


def test_approval_completes_the_edit_with_completed_and_artifact_ready(api, control, receiver):
    subscribe(api, f"{receiver.url}/done", ["job.completed", "artifact.ready"])
    edit = api.post(
        "/v1/video/edit", json={"projectId": "prj_acme_01", "footageUrls": FOOTAGE}
    ).json()["job"]
    control.advance(600)
    assert api.post("/v1/video/edit/approve", json={"jobId": edit["id"]}).status_code == 200
    control.advance(3600)
    flush(control)
    assert sorted(b["event"] for b in received(receiver)) == ["artifact.ready", "job.completed"]


def test_a_failed_job_sends_job_failed_only_to_those_who_want_it(api, control, receiver):
    subscribe(api, f"{receiver.url}/failed", ["job.failed"])
    edit = api.post(
        "/v1/video/edit", json={"projectId": "prj_acme_01", "footageUrls": FOOTAGE}
    ).json()["job"]
    control.call(
        "POST", f"/jobs/{edit['id']}/outcome", {"status": "qa_failed", "immediately": True}
    )
    flush(control)
    [body] = received(receiver)
    assert body["event"] == "job.failed" and body["data"]["status"] == "qa_failed"


def test_a_disabled_subscription_gets_nothing_and_a_rotated_secret_signs(api, control, receiver):
    subscription = subscribe(api, f"{receiver.url}/toggle", ["job.progressed"])
    path = f"/v1/webhook-subscriptions/{subscription['id']}"
    api.patch(path, json={"enabled": False})
    api.post("/v1/video/edit", json={"projectId": "prj_acme_01", "footageUrls": FOOTAGE})
    control.advance(60)
    flush(control)
    assert receiver.deliveries == []
    rotated = "rotated-secret-" + "r" * 30
    api.patch(path, json={"enabled": True, "secret": rotated})
    control.advance(60)
    flush(control)
    assert receiver.deliveries
    for delivery in receiver.deliveries:
        headers = delivery.headers
        assert verify(
            rotated, headers["x-service-timestamp"], delivery.body, headers["x-service-signature"]
        )


def test_a_delivery_due_again_after_its_subscription_is_disabled_is_cancelled(
    api, control, receiver
):
    """A delivery whose subscription is disabled before its next attempt is not attempted
    again: it ends ``cancelled`` with the attempts it had."""
    receiver.script([500] * 20)
    subscription = subscribe(api, f"{receiver.url}/later", ["job.progressed"])
    api.post("/v1/video/edit", json={"projectId": "prj_acme_01", "footageUrls": FOOTAGE})
    control.advance(60)
    flush(control)
    tried = len(receiver.deliveries)
    assert tried, "the first attempts were made (and answered 500)"
    path = f"/v1/webhook-subscriptions/{subscription['id']}"
    assert api.patch(path, json={"enabled": False}).status_code == 200
    control.advance(3600)
    flush(control)
    assert len(receiver.deliveries) == tried, "nothing attempted once disabled"
    snapshot = control.call("GET", "/snapshot")["snapshot"]
    mine = [d for d in snapshot["deliveries"].values() if d["targetId"] == subscription["id"]]
    assert mine and {d["state"] for d in mine} == {"cancelled"}
    assert all(len(d["attempts"]) == 1 and "_claim" not in d for d in mine)


def test_events_of_another_workspace_never_arrive(api, control, receiver):
    subscribe(api, f"{receiver.url}/acme", JOB_EVENTS)
    response = api.post(
        "/v1/video/edit", json={"projectId": "prj_globex_01", "footageUrls": FOOTAGE}, key="globex"
    )
    assert response.status_code == 200
    control.advance(3600)
    flush(control)
    assert receiver.deliveries == []
