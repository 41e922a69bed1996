"""The webhook relay (issue 26 part 3): a deployment's deliveries judged, then forwarded to the
integrator's endpoint, whose answer goes back to the deployment.

Real components: the bundled mock served over HTTP delivers to the relay (a subscription to the
relay's URL; the mock allows a loopback receiver), the relay forwards to a small integrator
endpoint served over HTTP, and the mock's control plane moves the clock and flushes deliveries.
Broken deliveries come from the kit's webhook defects (tests/defects/webhooks.py) and from
deliveries crafted here and posted to the relay, so that each rule is tested alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conformance.checks import all_checks
from conformance.contract import Contract
from conformance.proxy.findings import Finding
from conformance.proxy.relay import Relay
from conformance.proxy.relay import main as relay_main
from conformance.proxy.relay_rules import CALLBACK_RULE, SUBSCRIPTION_RULE
from conformance.signatures import expected_signature
from tests.conformance.proxying import Proxy
from tests.conformance.support import OWNER, free_port, live_mock
from tests.support.serve import Served

ROOT = Path(__file__).resolve().parents[2]
SECRET = "relay-test-secret-" + "s" * 24
OTHER_SECRET = "another-secret-" + "o" * 24
TIMESTAMP = "2026-11-27T10:00:00Z"
SENDER = httpx.Client(timeout=30)  # crafted deliveries (one client: each costs ~0.1 s to make)


class Integrator:
    """The integrator's endpoint: records what it receives and answers as scripted (a list of
    statuses, one per request, the last repeated)."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.statuses = [200]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        status = self.statuses[min(len(self.received), len(self.statuses) - 1)]
        self.received.append({"path": scope["path"], "headers": headers, "body": body})
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), (b"x-integrator", b"yes")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps({"got": status}).encode()})


@pytest.fixture
def integrator() -> Iterator[tuple[Integrator, str]]:
    app = Integrator()
    with Served(app, log_level="error", lifespan="off") as server:
        yield app, server.base_url + "/integrator"


@pytest.fixture
def relay(integrator: tuple[Integrator, str]) -> Iterator[Relay]:
    with Relay(integrator[1], [SECRET], profile="full") as running:
        yield running


def check_names() -> set[str]:
    return {c.name for c in all_checks()}


# -- the bundled mock delivering ---------------------------------------------------------------


def subscribe(http: httpx.Client, url: str, secret: str = SECRET) -> str:
    events = Contract().full.resolve({"$ref": "#/components/schemas/SubscriptionEventName"})["enum"]
    response = http.post(
        "/v1/webhook-subscriptions",
        json={"url": url, "events": events, "secret": secret},
        headers={"Authorization": f"Bearer {OWNER}", "Idempotency-Key": f"relay-{url}"},
    )
    assert response.status_code == 200, response.text
    return str(response.json()["subscription"]["id"])


def control(http: httpx.Client, method: str, path: str, body: Any = None) -> dict[str, Any]:
    response = http.request(method, f"/_mock{path}", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def flush(http: httpx.Client) -> None:
    for _ in range(3):
        if control(http, "POST", "/deliveries/flush", {"timeoutSeconds": 15})["pending"] == 0:
            return


def retry_due(http: httpx.Client) -> None:
    """Move the mock's clock past the first retry's backoff (30 s, jitter 0.2) and flush."""
    control(http, "POST", "/clock/advance", {"seconds": 40})
    control(http, "POST", "/deliveries/flush", {"timeoutSeconds": 15})


@pytest.fixture
def mock() -> Iterator[httpx.Client]:
    with live_mock() as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
        yield http


def test_a_faithful_deployments_deliveries_give_no_finding_and_reach_the_integrator(
    mock: httpx.Client, relay: Relay, integrator: tuple[Integrator, str]
) -> None:
    app, _ = integrator
    subscription = subscribe(mock, relay.url + "/hooks")
    for event in ("job.completed", "job.failed", "job.cancelled", "job.awaiting_approval",
                  "publish.completed", "publish.failed", "job.progressed"):  # fmt: skip
        control(mock, "POST", "/events/trigger", {"event": event})
    flush(mock)

    deliveries = control(mock, "GET", "/deliveries?limit=1000")["deliveries"]
    assert len(deliveries) >= 7 and all(d["state"] == "delivered" for d in deliveries)
    assert relay.findings == [], [f.line() for f in relay.findings]
    summary = relay.summary()
    assert summary["deliveries"] == len(deliveries) == len(app.received)
    assert summary["unverified"] == 0 and summary["judged"] == {SUBSCRIPTION_RULE: len(deliveries)}
    assert summary["answers"] == {"200": len(deliveries)}
    # forwarded as sent: the exact bytes, the X-Service-* headers, below the integrator's path
    sent = {d["eventId"]: d["body"].encode() for d in deliveries}
    for got in app.received:
        assert got["path"] == "/integrator/hooks"
        assert got["headers"]["x-service-subscription-id"] == subscription
        assert sent[got["headers"]["x-service-event-id"]] == got["body"]
        signature = expected_signature(SECRET, got["headers"]["x-service-timestamp"], got["body"])
        assert got["headers"]["x-service-signature"] == signature


def test_the_integrators_answer_goes_back_and_a_retry_keeping_its_event_id_is_no_finding(
    mock: httpx.Client, relay: Relay, integrator: tuple[Integrator, str]
) -> None:
    app, _ = integrator
    app.statuses = [500, 200]
    subscribe(mock, relay.url)
    control(mock, "POST", "/events/trigger", {"event": "job.progressed"})
    flush(mock)
    first = control(mock, "GET", "/deliveries")["deliveries"][0]
    assert [a["status"] for a in first["attempts"]] == [500], "the integrator's 500 came back"
    assert first["state"] == "pending"

    retry_due(mock)  # (the job moves on too: its later events are delivered as well)
    again = control(mock, "GET", "/deliveries")["deliveries"][0]
    assert again["id"] == first["id"] and [a["status"] for a in again["attempts"]] == [500, 200]
    ids = [r["headers"]["x-service-event-id"] for r in app.received]
    assert ids.count(first["eventId"]) == 2 and ids[0] == first["eventId"]
    assert app.received[0]["path"] == "/integrator"
    assert relay.findings == [], [f.line() for f in relay.findings]
    assert relay.summary()["redeliveries"] == 1
    assert relay.summary()["answers"] == {"500": 1, "200": len(ids) - 1}


def test_a_replay_keeps_its_event_id_and_a_redelivery_after_a_rejection_is_only_a_note(
    integrator: tuple[Integrator, str],
) -> None:
    """The mock's replay (the same eventId) is no finding. A retry of a delivery the integrator
    rejected with 400 (the kit's retry-after-400 defect) breaks "other 4xx are a permanent
    rejection", but a replay during recovery looks alike from the receiving end: a note."""
    app, forward_to = integrator
    app.statuses = [400, 200]
    with (
        live_mock(defects=["retry-after-400"]) as server,
        httpx.Client(base_url=server.base_url, timeout=30) as mock,
        Relay(forward_to, [SECRET]) as relay,
    ):
        subscribe(mock, relay.url)
        control(mock, "POST", "/events/trigger", {"event": "job.completed"})
        flush(mock)
        first = control(mock, "GET", "/deliveries")["deliveries"][0]
        retry_due(mock)
        control(mock, "POST", f"/deliveries/{first['id']}/replay")
        flush(mock)
        ids = [r["headers"]["x-service-event-id"] for r in app.received]
        assert ids.count(first["eventId"]) == 3, "answered 400, retried, then replayed"
        assert relay.findings == [], [f.line() for f in relay.findings]
        assert relay.summary()["redeliveries"] == 2
        assert any("although the integrator rejected it with 400" in n for n in relay.notes)


@pytest.mark.parametrize(
    ("defect", "part"),
    [
        ("new-event-id-on-retry", "delivered again as"),
        ("uppercase-signature-hex", "X-Service-Signature"),
        ("signature-over-reserialised-body", "X-Service-Signature"),
        ("delivery-timestamp-without-z", "X-Service-Timestamp"),
    ],
)
def test_a_broken_deployments_deliveries_give_the_finding_of_the_rule_they_break(
    integrator: tuple[Integrator, str], defect: str, part: str
) -> None:
    app, forward_to = integrator
    app.statuses = [503, 200]  # the first attempt fails, so that a retry comes
    with (
        live_mock(defects=[defect]) as server,
        httpx.Client(base_url=server.base_url, timeout=30) as mock,
        Relay(forward_to, [SECRET]) as relay,
    ):
        subscribe(mock, relay.url)
        control(mock, "POST", "/events/trigger", {"event": "job.progressed"})
        flush(mock)
        retry_due(mock)
        findings = list(relay.findings)
    assert findings, f"{defect} was not found"
    assert {f.rule for f in findings} == {SUBSCRIPTION_RULE}
    assert all(f.side == "deployment" and f.operation_id == "onJobProgressed" for f in findings)
    assert all(part in f.message for f in findings), [f.message for f in findings]
    assert SUBSCRIPTION_RULE in check_names()


def render_with_callback(http: httpx.Client, url: str, status: str) -> str:
    """A render whose callback goes to ``url``, decided to end ``status``, run to its end."""
    response = http.post(
        "/v1/video/render",
        json={
            "projectId": "prj_acme_01",
            "story": "A lighthouse keeper.",
            "callbackUrl": url,
            "callbackSecret": SECRET,
        },
        headers={"Authorization": f"Bearer {OWNER}", "Idempotency-Key": f"render-{status}"},
    )
    assert response.status_code == 200, response.text
    job_id = str(response.json()["job"]["id"])
    control(http, "POST", f"/jobs/{job_id}/outcome", {"status": status, "immediately": True})
    control(http, "POST", "/clock/advance", {"seconds": 3600})
    flush(http)
    return job_id


def test_a_faithful_deployments_per_job_callbacks_are_judged_by_the_callback_check(
    integrator: tuple[Integrator, str],
) -> None:
    """(The kit's qa-failed-artifacts defect changes the job read, not its callback, whose
    artifacts only a done job carries: a callback breaking it is crafted below.)"""
    app, forward_to = integrator
    with (
        live_mock() as server,
        httpx.Client(base_url=server.base_url, timeout=30) as mock,
        Relay(forward_to, [SECRET], profile="full") as relay,
    ):
        jobs = [render_with_callback(mock, relay.url + "/cb", s) for s in ("done", "qa_failed")]
        assert relay.summary()["judged"] == {CALLBACK_RULE: 2}
        assert [r["headers"]["x-service-job-id"] for r in app.received] == jobs
        assert [r["path"] for r in app.received] == ["/integrator/cb"] * 2
        assert relay.findings == [], [f.line() for f in relay.findings]


# -- crafted deliveries, one rule at a time ----------------------------------------------------


def event_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "schemaVersion": "automation-event.v1",
        "eventId": "evt_1",
        "event": "job.progressed",
        "occurredAt": "2026-11-27T10:00:00Z",
        "workspaceId": "ws_1",
        "data": {
            "jobId": "job_1",
            "projectId": "prj_1",
            "status": "running",
            "phase": None,
            "sequence": 1,
            "resourceUrl": "/v1/jobs/job_1",
        },
    }
    data = changes.pop("data", {})
    body.update(changes)
    body["data"].update(data)
    return body


def callback_body(**changes: Any) -> dict[str, Any]:
    return {
        "schemaVersion": "job-event.v1",
        "eventId": "evt_cb",
        "event": "render.completed",
        "jobId": "job_9",
        "status": "done",
        "error": None,
        "workspaceId": "ws_1",
        "artifacts": {
            "videoUrl": "https://cdn.example/v.mp4",
            "downloadUrls": {"video": "https://cdn.example/v.mp4"},
        },
    } | changes


def deliver(
    relay: Relay,
    body: dict[str, Any] | bytes,
    *,
    secret: str = SECRET,
    timestamp: str = TIMESTAMP,
    headers: dict[str, str] | None = None,
    path: str = "/",
) -> httpx.Response:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    parsed = json.loads(raw) if not isinstance(body, bytes) else {}
    sent = {
        "content-type": "application/json",
        "x-service-signature": expected_signature(secret, timestamp, raw),
        "x-service-timestamp": timestamp,
        "x-service-event": str(parsed.get("event", "job.progressed")),
        "x-service-event-id": str(parsed.get("eventId", "evt_1")),
    }
    if parsed.get("schemaVersion") == "job-event.v1":
        sent["x-service-job-id"] = str(parsed.get("jobId"))
    else:
        sent["x-service-subscription-id"] = "sub_1"
    sent.update(headers or {})
    return SENDER.post(relay.url + path, content=raw, headers=sent)


def parts(relay: Relay) -> list[str]:
    return [f.message for f in relay.findings]


def test_a_good_delivery_is_forwarded_with_its_headers_and_the_answer_passed_back(
    relay: Relay, integrator: tuple[Integrator, str]
) -> None:
    app, _ = integrator
    app.statuses = [418]
    answer = deliver(relay, event_body(), path="/deep/hook?x=1")
    assert answer.status_code == 418 and answer.json() == {"got": 418}
    assert answer.headers["x-integrator"] == "yes"
    assert app.received[0]["path"] == "/integrator/deep/hook"
    assert app.received[0]["headers"]["x-service-event-id"] == "evt_1"
    assert relay.findings == []
    assert any("answered 418" in n for n in relay.notes), "an integrator's 4xx is a note"
    assert deliver(relay, callback_body()).status_code == 418
    assert relay.findings == [] and relay.summary()["judged"] == {
        SUBSCRIPTION_RULE: 1,
        CALLBACK_RULE: 1,
    }


@pytest.mark.parametrize(
    ("secrets", "found"),
    [([SECRET], True), ([OTHER_SECRET, "x" * 40], False), ([], False)],
)
def test_a_signature_under_another_secret_is_a_finding_unless_a_secret_given_matches(
    integrator: tuple[Integrator, str], secrets: list[str], found: bool
) -> None:
    with Relay(integrator[1], secrets) as relay:
        deliver(relay, event_body(), secret=OTHER_SECRET)
        assert bool(relay.findings) == found, parts(relay)
        if found:
            (finding,) = relay.findings
            assert finding.rule == SUBSCRIPTION_RULE and "X-Service-Signature" in finding.message
        assert relay.summary()["unverified"] == (0 if secrets else 1)


@pytest.mark.parametrize(
    ("timestamp", "finding"),
    [
        ("2026-11-27T10:00:00+00:00", True),  # not ending in Z
        ("2026-13-27T10:00:00Z", True),  # no such instant
        ("2026-11-27T10:00:00.5Z", True),  # whole seconds (full profile)
        ("2001-01-01T00:00:00Z", False),  # old: receivers must not depend on it being recent
    ],
)
def test_the_timestamps_form_is_judged_never_its_age(
    relay: Relay, timestamp: str, finding: bool
) -> None:
    deliver(relay, event_body(), timestamp=timestamp)
    assert bool(relay.findings) == finding, parts(relay)
    assert all("X-Service-Timestamp" in m for m in parts(relay))


def test_fractional_seconds_are_held_only_under_the_full_profile(
    integrator: tuple[Integrator, str],
) -> None:
    with Relay(integrator[1], [SECRET], profile="contract") as relay:
        deliver(relay, event_body(), timestamp="2026-11-27T10:00:00.5Z")
        assert relay.findings == []


@pytest.mark.parametrize(
    ("body", "headers", "expected"),
    [
        (event_body(data={"sequence": "3"}), {}, "data/sequence"),
        (event_body(schemaVersion="automation-event.v2"), {}, "schemaVersion"),
        (event_body(event="job.exploded"), {}, "not one the contract names"),
        (event_body(), {"x-service-event-id": "evt_other"}, "X-Service-Event-Id is 'evt_other'"),
        (event_body(), {"x-service-event": "job.failed"}, "X-Service-Event is 'job.failed'"),
        (b"not json", {}, "not JSON"),
        (b"null", {}, "body: null is not of type"),
        (b'{"schemaVersion": [1], "event": {"a": 1}}', {}, 'but the body\'s is {"a": 1}'),
        (callback_body(status="qa_failed"), {}, "artifacts"),
        (callback_body(status="running", artifacts=None), {}, "status"),
        (callback_body(), {"x-service-job-id": "job_other"}, "X-Service-Job-Id"),
    ],
)
def test_an_envelope_breaking_the_contract_is_a_finding(
    relay: Relay, body: Any, headers: dict[str, str], expected: str
) -> None:
    deliver(relay, body, headers=headers)
    assert relay.findings, f"no finding for {expected}"
    assert any(expected in m for m in parts(relay)), parts(relay)
    assert {f.rule for f in relay.findings} <= {SUBSCRIPTION_RULE, CALLBACK_RULE} <= check_names()


def test_missing_delivery_headers_are_a_finding(relay: Relay) -> None:
    raw = json.dumps(event_body()).encode()
    SENDER.post(
        relay.url,
        content=raw,
        headers={
            "x-service-signature": expected_signature(SECRET, TIMESTAMP, raw),
            "x-service-timestamp": TIMESTAMP,
        },
    )
    assert any(
        "missing headers X-Service-Event, X-Service-Event-Id, X-Service-Subscription-Id" in m
        for m in parts(relay)
    ), parts(relay)


def test_a_redelivery_must_keep_its_event_id_and_an_event_id_names_one_event(
    relay: Relay,
) -> None:
    deliver(relay, event_body())
    deliver(relay, event_body())  # a retry, the same id: fine
    assert relay.findings == [] and relay.summary()["redeliveries"] == 1
    deliver(relay, event_body(eventId="evt_1_again"))  # the same event, a new id
    assert any("delivered again as evt_1_again" in m for m in parts(relay)), parts(relay)
    deliver(relay, event_body(data={"sequence": 2}))  # evt_1 again, but another event
    assert any("eventId evt_1 was first delivered as" in m for m in parts(relay)), parts(relay)
    assert len(relay.findings) == 2
    assert relay.summary()["findingsByRule"] == {SUBSCRIPTION_RULE: 2}
    # another subscription (its own ids) receiving the same event is no redelivery
    deliver(relay, event_body(eventId="evt_9"), headers={"x-service-subscription-id": "sub_2"})
    assert len(relay.findings) == 2


def test_delivery_order_is_a_note_a_terminal_status_left_a_finding_under_full(
    integrator: tuple[Integrator, str],
) -> None:
    done = {"event": "job.completed", "data": {"status": "done", "sequence": 3}}
    for profile in ("full", "contract"):
        with Relay(integrator[1], [SECRET], profile=profile) as relay:
            deliver(relay, event_body(eventId="e3", **done))
            deliver(relay, event_body(eventId="e2", data={"sequence": 2}))  # late: a note
            assert relay.findings == [], parts(relay)
            assert any("arrived after sequence 3" in n for n in relay.notes)
            deliver(relay, event_body(eventId="e4", data={"sequence": 4}))  # running after done
            if profile == "full":
                (finding,) = relay.findings
                assert "'running' at sequence 4 after 'done' at 3" in finding.message
            else:
                assert relay.findings == [], "data.sequence's order is inferred"


def test_a_relay_to_that_is_no_url_is_refused_by_the_standalone_relay(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert relay_main(["--relay-to", "localhost:3000"]) == 2
    assert "--relay-to must be an http(s) URL" in capsys.readouterr().err


def test_an_integrator_that_cannot_be_reached_answers_502_and_is_no_finding() -> None:
    with Relay(f"http://127.0.0.1:{free_port()}/down", [SECRET]) as relay:
        answer = deliver(relay, event_body())
        assert answer.status_code == 502
        assert relay.findings == []
        assert relay.summary()["unreachable"] == 1
        assert any("could not be reached" in n for n in relay.notes)


def test_secrets_are_masked_in_findings_and_absent_from_lines_and_counts(
    integrator: tuple[Integrator, str],
) -> None:
    with Relay(integrator[1], [SECRET, OTHER_SECRET]) as relay:
        deliver(relay, event_body(workspaceId=SECRET), secret="wrong-" + "w" * 30)
        (finding,) = [f for f in relay.findings if "X-Service-Signature" in f.message]
        shown = json.dumps(
            [f.to_dict() for f in relay.findings] + [f.line() for f in relay.findings]
        )
        assert SECRET not in shown and OTHER_SECRET not in shown
        assert "${WEBHOOK_SECRET_1}" in shown  # the body carried it: masked
        assert SECRET not in json.dumps(relay.summary()) and relay.summary()["secrets"] == 2
        assert isinstance(finding, Finding) and finding.exchange is not None


def test_what_the_relay_remembers_is_bounded(integrator: tuple[Integrator, str]) -> None:
    with Relay(integrator[1], [SECRET], memory=3) as relay:
        deliver(relay, event_body())
        for n in range(2, 12):
            deliver(relay, event_body(eventId=f"evt_{n}", data={"jobId": f"job_{n}"}))
        assert max(len(relay.judge.events), len(relay.judge.identities)) == 3
        assert len(relay.judge.jobs) == 3
        deliver(relay, event_body(eventId="evt_1_again"))  # forgotten: not judged
        assert relay.findings == []
    with Relay(integrator[1], [SECRET], memory=100) as relay:  # remembered: judged
        deliver(relay, event_body())
        for n in range(2, 12):
            deliver(relay, event_body(eventId=f"evt_{n}", data={"jobId": f"job_{n}"}))
        deliver(relay, event_body(eventId="evt_1_again"))
        assert len(relay.findings) == 1


# -- standalone --------------------------------------------------------------------------------


def test_the_standalone_relay_prints_each_finding_and_a_summary_and_exits_1(
    integrator: tuple[Integrator, str],
) -> None:
    port = free_port()
    env = os.environ | {"PYTHONPATH": str(ROOT), "CONFORMANCE_WEBHOOK_SECRET": OTHER_SECRET}
    command = [sys.executable, "-m", "conformance.proxy.relay", "--relay-to", integrator[1],
               "--relay-listen", f"127.0.0.1:{port}", "--webhook-secret", SECRET]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    try:
        url = f"http://127.0.0.1:{port}"
        assert process.stderr is not None
        started = process.stderr.readline()
        assert started.startswith(f"relay: listening on {url}, forwarding to {integrator[1]}")
        assert "2 secret(s)" in started
        raw = json.dumps(event_body()).encode()
        good = {
            "x-service-signature": expected_signature(OTHER_SECRET, TIMESTAMP, raw),
            "x-service-timestamp": TIMESTAMP,
            "x-service-event": "job.progressed",
            "x-service-event-id": "evt_1",
            "x-service-subscription-id": "sub_1",
        }
        assert httpx.post(url, content=raw, headers=good).status_code == 200
        bad = good | {"x-service-signature": "sha256=" + "0" * 64}
        assert httpx.post(url, content=raw, headers=bad).status_code == 200
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, err
    lines = out.splitlines()
    assert [line for line in lines if line.startswith("FINDING")] == [
        line for line in lines if line.startswith(f"FINDING deployment {SUBSCRIPTION_RULE} ")
    ]
    assert len([line for line in lines if line.startswith("FINDING")]) == 1
    assert lines[-1].startswith("relay: 2 deliveries") and "1 finding(s)" in lines[-1]
    assert "signature ok" in err and "signature BAD" in err
    assert SECRET not in out + err + started and OTHER_SECRET not in out + err + started


# -- inside conformance proxy ------------------------------------------------------------------


@pytest.mark.parametrize("secret", [SECRET, OTHER_SECRET], ids=["its-secret", "another-secret"])
def test_conformance_proxy_relays_with_its_relay_options(
    tmp_path: Path, integrator: tuple[Integrator, str], secret: str
) -> None:
    """``conformance proxy --relay-to ... --relay-listen ... --webhook-secret ...``: the mock's
    deliveries reach the integrator through the proxy's relay; under another secret each is a
    signature finding, printed as it happens and in the proxy's JSON report, and exits 1."""
    app, endpoint = integrator
    listen = f"127.0.0.1:{free_port()}"
    options = ("--relay-to", endpoint, "--relay-listen", listen, "--webhook-secret", secret)
    with live_mock() as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
        with Proxy(server.base_url, tmp_path, *options) as proxy:
            subscribe(http, f"http://{listen}/hooks")
            control(http, "POST", "/events/trigger", {"event": "job.completed"})
            flush(http)
        assert len(app.received) >= 1 and app.received[0]["path"] == "/integrator/hooks"
    assert f"relaying webhooks: deliveries to http://{listen}" in proxy.output
    report = proxy.report
    relayed = [f for f in report["findings"] if f["rule"] == SUBSCRIPTION_RULE]
    if secret == SECRET:
        assert proxy.status == 0 and relayed == [], proxy.output
        return
    assert proxy.status == 1 and relayed and all(f["side"] == "deployment" for f in relayed)
    assert f"FINDING deployment {SUBSCRIPTION_RULE}" in proxy.output
    assert secret not in proxy.output and secret not in json.dumps(report)
