"""Per-job callbacks: refused addresses at request time, and signed, retried deliveries."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest

from conformance.signatures import check_timestamp_format, verify
from mockserver.app import create_app
from mockserver.contract import default_contract
from tests.conftest import TEST_SETTINGS
from tests.support.client import ApiClient, ControlClient
from tests.support.inproc import InProcessClient
from tests.support.schemas import schema_validator

SECRET = "callback-secret-" + "x" * 24
POLICY = default_contract().limits["webhookDelivery"]


def render(api, callback_url: str, **extra) -> dict:
    body = {"projectId": "prj_acme_01", "story": "A lighthouse keeper."}
    body.update(callbackUrl=callback_url, callbackSecret=SECRET, **extra)
    response = api.post("/v1/video/render", json=body)
    assert response.status_code == 200, response.text
    return response.json()["job"]


def flush(control) -> None:
    control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})


def deliveries_of(control, job_id: str) -> list[dict]:
    return [
        d
        for d in control.call("GET", "/deliveries?limit=1000")["deliveries"]
        if d.get("jobId") == job_id
    ]


def test_a_done_job_delivers_one_signed_job_event(api, control, receiver):
    job = render(api, f"{receiver.url}/hooks/render")
    control.advance(3600)
    flush(control)
    assert len(receiver.deliveries) == 1
    got = receiver.deliveries[0]
    headers, body = got.headers, json.loads(got.body)
    assert verify(SECRET, headers["x-service-timestamp"], got.body, headers["x-service-signature"])
    assert check_timestamp_format(headers["x-service-timestamp"])
    assert headers["x-service-event"] == body["event"] == "render.completed"
    assert headers["x-service-event-id"] == body["eventId"]
    assert headers["x-service-job-id"] == body["jobId"] == job["id"]
    assert "x-service-subscription-id" not in headers
    schema_validator("JobCallbackEvent").validate(body)
    assert body["status"] == "done" and body["error"] is None
    assert body["artifacts"]["videoUrl"] == body["artifacts"]["downloadUrls"]["video"]
    finished = api.get(f"/v1/jobs/{job['id']}").json()["job"]
    assert (
        finished["artifacts"]["download"]
        == finished["artifacts"]["video"]
        == body["artifacts"]["videoUrl"]
    )
    [record] = deliveries_of(control, job["id"])
    assert record["state"] == "delivered" and record["attempts"][0]["status"] == 200


def test_the_bytes_signed_are_the_bytes_sent(api, control, receiver):
    render(api, f"{receiver.url}/raw")
    control.advance(3600)
    flush(control)
    got = receiver.deliveries[0]
    resorted = json.dumps(json.loads(got.body), sort_keys=True, indent=1).encode()
    assert resorted != got.body
    assert not verify(
        SECRET, got.headers["x-service-timestamp"], resorted, got.headers["x-service-signature"]
    )


@pytest.mark.parametrize("outcome", ["failed", "qa_failed", "cancelled"])
def test_only_done_carries_artifacts(api, control, receiver, outcome):
    job = render(api, f"{receiver.url}/outcomes")
    control.call("POST", f"/jobs/{job['id']}/outcome", {"status": outcome})
    control.advance(3600)
    flush(control)
    body = json.loads(receiver.deliveries[0].body)
    schema_validator("JobCallbackEvent").validate(body)
    assert body["status"] == outcome and body["artifacts"] is None and body["error"]
    read = api.get(f"/v1/jobs/{job['id']}").json()["job"]
    assert read["status"] == outcome and read["artifacts"] is None and read["error"]


def test_503_twice_then_200_makes_three_attempts_with_one_event_id(api, control, receiver):
    receiver.script([503, 503, 200])
    job = render(api, f"{receiver.url}/flaky")
    control.advance(3600)
    flush(control)
    for backoff in POLICY["backoffSeconds"][:2]:
        control.advance(backoff * (1 + POLICY["jitterRatio"]) + 1)
        flush(control)
    assert len(receiver.deliveries) == 3
    assert len({d.headers["x-service-event-id"] for d in receiver.deliveries}) == 1
    assert len({d.body for d in receiver.deliveries}) == 1
    [record] = deliveries_of(control, job["id"])
    assert [a["status"] for a in record["attempts"]] == [503, 503, 200]
    assert record["state"] == "delivered"


def test_retries_follow_increasing_backoff_with_bounded_jitter(api, control, receiver):
    receiver.script([500] * 10)
    job = render(api, f"{receiver.url}/down")
    control.advance(3600)
    flush(control)
    for _ in range(POLICY["attempts"] + 2):
        control.advance(3 * 3600)
        flush(control)
    [record] = deliveries_of(control, job["id"])
    assert record["state"] == "failed" and len(record["attempts"]) == POLICY["attempts"]
    stamps = [a["at"] for a in record["attempts"]]
    assert stamps == sorted(stamps)


def test_429_with_retry_after_waits_exactly_that_long(api, control, receiver):
    receiver.script([(429, {"Retry-After": "7"}), 200])
    job = render(api, f"{receiver.url}/busy")
    control.advance(3600)
    flush(control)
    [record] = deliveries_of(control, job["id"])
    first = record["attempts"][0]["at"]
    from mockserver.platform.clock import parse_time

    assert (parse_time(record["nextAttemptAt"]) - parse_time(first)).total_seconds() == 7
    control.advance(6)
    flush(control)
    assert len(receiver.deliveries) == 1
    control.advance(1)
    flush(control)
    assert len(receiver.deliveries) == 2
    assert deliveries_of(control, job["id"])[0]["state"] == "delivered"


@pytest.mark.parametrize("answer", [400, 410, (302, {"Location": "https://elsewhere.example/"})])
def test_other_4xx_and_redirects_are_permanent(api, control, receiver, answer):
    receiver.script([answer, 200, 200])
    job = render(api, f"{receiver.url}/gone")
    control.advance(3600)
    flush(control)
    control.advance(24 * 3600)
    flush(control)
    assert len(receiver.deliveries) == 1
    [record] = deliveries_of(control, job["id"])
    assert record["state"] == "failed" and record["attempts"][0]["outcome"] == "permanent"


def test_a_replay_keeps_the_event_id(api, control, receiver):
    job = render(api, f"{receiver.url}/replay")
    control.advance(3600)
    flush(control)
    [record] = deliveries_of(control, job["id"])
    again = control.call("POST", f"/deliveries/{record['id']}/replay")["delivery"]
    flush(control)
    assert again["eventId"] == record["eventId"] and again["replayOf"] == record["id"]
    assert [d.headers["x-service-event-id"] for d in receiver.deliveries] == [record["eventId"]] * 2


def test_a_receiver_that_never_answers_does_not_slow_the_api(live, receiver):
    api, control = live
    receiver.script(["hang"])
    job = render(api, f"{receiver.url}/hang")
    control.advance(3600)
    control.call("POST", "/deliveries/flush", {"timeoutSeconds": 0})
    timings = []
    for _ in range(20):
        started = time.perf_counter()
        assert api.get(f"/v1/jobs/{job['id']}").status_code == 200
        timings.append(time.perf_counter() - started)
    assert max(timings) < 0.5, timings
    assert len(receiver.deliveries) == 1


def test_the_secret_is_never_echoed_nor_kept_in_clear(api, control, receiver):
    job = render(api, f"{receiver.url}/secret")
    assert SECRET not in json.dumps(job)
    assert SECRET not in api.get(f"/v1/jobs/{job['id']}").text
    assert SECRET not in json.dumps(control.call("GET", "/snapshot"))
    assert SECRET not in json.dumps(control.call("GET", "/deliveries"))


@pytest.mark.parametrize(
    "extra",
    [
        {"callbackSecret": SECRET},
        {"callbackUrl": "https://hooks.example.com/x"},
        {"callbackUrl": "https://hooks.example.com/x", "callbackSecret": "s" * 31},
        {"callbackUrl": "https://hooks.example.com/x", "callbackSecret": "s" * 513},
        {"callbackUrl": "not a url", "callbackSecret": SECRET},
    ],
)
def test_callback_fields_come_together_and_the_secret_is_32_to_512(api, control, extra):
    before = control.credits()
    response = api.post(
        "/v1/video/render", json={"projectId": "prj_acme_01", "story": "x", **extra}
    )
    assert response.status_code == 400 and response.json()["code"] == "invalid_request"
    assert control.credits() == before, "refused before any charge"


# -- refused at request time (a mock without --allow-private-callbacks) ------------------------

REFUSED = [
    ("http://hooks.example.com/x", "not_https"),
    ("ftp://hooks.example.com/x", "not_https"),
    ("https://localhost/x", "localhost"),
    ("https://api.localhost/x", "localhost"),
    ("https://127.0.0.1/x", "loopback_address"),
    ("https://127.1/x", "loopback_address"),
    ("https://2130706433/x", "loopback_address"),
    ("https://0x7f000001/x", "loopback_address"),
    ("https://0177.0.0.1/x", "loopback_address"),
    ("https://[::1]/x", "loopback_address"),
    ("https://[::ffff:127.0.0.1]/x", "loopback_address"),
    ("https://[::ffff:7f00:1]/x", "loopback_address"),
    ("https://10.1.2.3/x", "private_address"),
    ("https://172.16.0.9/x", "private_address"),
    ("https://192.168.1.1/x", "private_address"),
    ("https://[fd12:3456::1]/x", "private_address"),
    ("https://169.254.169.254/latest/meta-data", "link_local_address"),
    ("https://[fe80::1]/x", "link_local_address"),
    ("https://100.64.0.1/x", "shared_address_space"),
    ("https://224.0.0.251/x", "multicast_address"),
    ("https://[ff02::1]/x", "multicast_address"),
    ("https://0.0.0.0/x", "unspecified_address"),
    ("https://[::]/x", "unspecified_address"),
    ("https://240.0.0.1/x", "reserved_address"),
    ("https://192.0.2.10/x", "reserved_address"),
    ("https://user:pass@hooks.example.com/x", "userinfo"),
]


@pytest.fixture(scope="module")
def strict():
    app = create_app(replace(TEST_SETTINGS, allow_private_callbacks=False))
    with InProcessClient(app, base_url="http://strict.test") as http:
        yield ApiClient(http), ControlClient(http)


def test_at_least_fifteen_refused_urls():
    assert len(REFUSED) >= 15


@pytest.mark.parametrize("url,rule", REFUSED, ids=[u for u, _ in REFUSED])
def test_callback_urls_to_non_public_addresses_are_refused_before_any_charge(strict, url, rule):
    api, control = strict
    control.reset()
    response = api.post(
        "/v1/video/render",
        json={
            "projectId": "prj_acme_01",
            "story": "x",
            "callbackUrl": url,
            "callbackSecret": SECRET,
        },
    )
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["code"] == "invalid_request" and error["details"]["rule"] == rule
    assert control.credits() == 10000
    assert api.get("/v1/jobs").json()["jobs"] == []


def test_the_refusal_names_the_developer_flag(strict):
    api, control = strict
    control.reset()
    response = api.post(
        "/v1/video/render",
        json={
            "projectId": "prj_acme_01",
            "story": "x",
            "callbackUrl": "http://127.0.0.1:9000/h",
            "callbackSecret": SECRET,
        },
    )
    assert "--allow-private-callbacks" in response.json()["error"]


def test_the_flag_lets_loopback_and_plain_http_through(api):
    assert render(api, "http://127.0.0.1:9/x")["status"] == "queued"
