"""Queued posts publish on the clock and reach a real receiver as signed publish events."""

from __future__ import annotations

import json

import jsonschema

from conformance.signatures import check_timestamp_format, verify
from mockserver.contract import default_contract
from tests.support.automation import ENABLED, WAITING_RUN, outcome, run_of, started

SECRET = "whsec_automation_" + "s" * 24
EVENTS = ["publish.completed", "publish.failed"]


def subscribe(api, url: str, events: list[str] = EVENTS) -> dict:
    response = api.post(
        "/v1/webhook-subscriptions",
        json={"url": url, "events": events, "secret": SECRET},
        headers={"Idempotency-Key": f"sub-{url}"},
    )
    assert response.status_code == 200, response.text
    return response.json()["subscription"]


def flush(control) -> None:
    control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})


def automation_event() -> jsonschema.Draft202012Validator:
    document = default_contract().document
    return jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/AutomationEvent", "components": document["components"]}
    )


def received(receiver) -> list[tuple[dict, dict]]:
    """Every delivery as (headers, body), each checked: signature, schema, headers."""
    validator = automation_event()
    out = []
    for got in receiver.deliveries:
        headers, body = got.headers, json.loads(got.body)
        assert verify(
            SECRET, headers["x-service-timestamp"], got.body, headers["x-service-signature"]
        )
        assert check_timestamp_format(headers["x-service-timestamp"])
        validator.validate(body)
        assert headers["x-service-event"] == body["event"]
        assert headers["x-service-event-id"] == body["eventId"]
        out.append((headers, body))
    return out


def test_published_posts_reach_the_receiver_as_signed_publish_completed(api, control, receiver):
    subscription = subscribe(api, f"{receiver.url}/hooks/publish")
    approved = api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve").json()["run"]
    posts = {p["jobId"]: p for p in approved["posts"]}
    control.advance(3600)
    flush(control)
    events = received(receiver)
    assert sorted(b["data"]["jobId"] for _, b in events) == sorted(posts)
    for headers, body in events:
        assert body["event"] == "publish.completed" and body["data"]["status"] == "done"
        assert body["data"]["resourceUrl"] == f"/v1/jobs/{body['data']['jobId']}"
        assert headers["x-service-subscription-id"] == subscription["id"]
        assert receiver.deliveries[0].path == "/hooks/publish"
    assert {p["status"] for p in run_of(api, WAITING_RUN)["posts"]} == {"published"}


def test_a_control_plane_outcome_makes_a_post_fail_with_publish_failed(api, control, receiver):
    subscribe(api, f"{receiver.url}/hooks/publish")
    approved = api.post(f"/v1/autopilot-runs/{WAITING_RUN}/approve").json()["run"]
    failing, ok = approved["posts"]
    outcome(control, failing["jobId"], "failed")
    control.advance(3600)
    flush(control)
    by_job = {b["data"]["jobId"]: b for _, b in received(receiver)}
    assert by_job[failing["jobId"]]["event"] == "publish.failed"
    assert by_job[failing["jobId"]]["data"]["status"] == "failed"
    assert by_job[ok["jobId"]]["event"] == "publish.completed"
    run = run_of(api, WAITING_RUN)
    assert run["status"] == "failed" and run["error"] == "1 of 2 posts failed to publish"
    assert [p["status"] for p in run["posts"]] == ["failed", "published"]
    retried = api.post(f"/v1/autopilot-runs/{WAITING_RUN}/retry").json()["run"]
    assert retried["status"] == "publishing" and retried["attempts"] == 2
    again = retried["posts"][-1]
    assert again["videoId"] == failing["videoId"] and again["status"] == "queued"
    assert len(retried["posts"]) == 3, "the published post is not posted twice"
    control.advance(3600)
    flush(control)
    assert received(receiver)[-1][1]["event"] == "publish.completed"
    assert run_of(api, WAITING_RUN)["status"] == "completed"


def test_a_subscription_only_gets_the_events_it_asked_for(api, control, receiver):
    subscribe(api, f"{receiver.url}/hooks/failures", events=["publish.failed"])
    run = started(api, ENABLED)
    control.advance(3600)
    approved = api.post(f"/v1/autopilot-runs/{run['id']}/approve").json()["run"]
    control.advance(3600)
    flush(control)
    assert receiver.deliveries == [], "publish.completed was not subscribed; renders never notify"
    assert run_of(api, approved["id"])["status"] == "completed"
