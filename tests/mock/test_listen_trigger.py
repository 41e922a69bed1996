"""``mockserver trigger`` and ``mockserver listen``: webhooks you can cause and see.

Trigger makes each subscription event of the interface document happen now through a real job
(its stream, its record and the deliveries agree; nothing is charged); listen subscribes to a
running mock started WITHOUT --allow-private-callbacks, checks every delivery's signature,
forwards the exact bytes to a local endpoint and answers the mock with that endpoint's status.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml

from conformance.signatures import verify
from mockserver import cli
from mockserver.app import create_app
from mockserver.control.plane import control_contract
from mockserver.settings import Settings
from tests.support.client import KEYS, ApiClient, ControlClient
from tests.support.schemas import schema_validator

ROOT = Path(__file__).resolve().parents[2]
SECRET = "trigger-test-secret-" + "t" * 20
EVENTS = yaml.safe_load((ROOT / "spec" / "openapi.yaml").read_text(encoding="utf-8"))["components"][
    "schemas"
]["SubscriptionEventName"]["enum"]
TERMINAL = {
    "job.completed": "done",
    "artifact.ready": "done",
    "job.failed": "failed",
    "job.cancelled": "cancelled",
    "publish.completed": "done",
    "publish.failed": "failed",
}


def control_validator(path: str, method: str) -> jsonschema.Draft202012Validator:
    """The control document's schema of an operation's 200 answer."""
    document = control_contract().document
    schema = document["paths"][path][method]["responses"]["200"]["content"]["application/json"]
    return jsonschema.Draft202012Validator(
        {**schema["schema"], "components": document["components"]},
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def subscribe(api: ApiClient, url: str, events: list[str], key: str = "owner") -> dict[str, Any]:
    response = api.post(
        "/v1/webhook-subscriptions",
        json={"url": url, "events": events, "secret": SECRET},
        headers={"Idempotency-Key": f"sub-{url}-{','.join(events)}"},
        key=key,
    )
    assert response.status_code == 200, response.text
    return response.json()["subscription"]


def ledger(api: ApiClient, key: str = "owner") -> tuple[int, int, int]:
    balance = api.get("/v1/capabilities", key=key).json()["balance"]["credits"]
    usage = api.get("/v1/usage", params={"limit": 100}, key=key).json()
    return balance, usage["totalCredits"], len(usage["usage"])


def flush(control: ControlClient, query: str = "") -> None:
    """Make the due attempts and wait for them. Flushed again while some stay pending: on the
    shared test mock (seeded ids, reset between tests) an attempt a previous test left hanging
    can hold a delivery id this test's delivery reuses, until its 10-second timeout."""
    for _ in range(3):
        if (
            control.call("POST", f"/deliveries/flush{query}", {"timeoutSeconds": 15})["pending"]
            == 0
        ):
            return


def triggered_job(out: str) -> str:
    match = re.search(r": job (job_\w+) \(", out)
    assert match, out
    return match.group(1)


# -- trigger ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "status"),
    [(event, None) for event in EVENTS] + [("job.failed", "qa_failed")],
)
def test_trigger_makes_the_event_happen_now_through_a_real_job_and_charges_nothing(
    live, live_server, receiver, capsys, event, status
):
    api, control = live
    subscription = subscribe(api, f"{receiver.url}/hooks", [event])
    before = ledger(api)
    argv = ["trigger", event, "--url", live_server.base_url]
    code, out, err = run_cli([*argv, "--status", status] if status else argv, capsys)
    assert code == 0, err
    job_id = triggered_job(out)
    flush(control)

    assert receiver.deliveries, f"no delivery of {event}"
    now = control.now()
    stream = api.get(f"/v1/jobs/{job_id}/events", params={"limit": 100}).json()["events"]
    for delivery in receiver.deliveries:
        body = json.loads(delivery.body)
        schema_validator("AutomationEvent").validate(body)
        assert body["event"] == event == delivery.headers["x-service-event"]
        assert body["data"]["jobId"] == job_id and body["occurredAt"] == now
        assert delivery.headers["x-service-subscription-id"] == subscription["id"]
        assert verify(
            SECRET, delivery.headers["x-service-timestamp"], delivery.body,
            delivery.headers["x-service-signature"],
        )  # fmt: skip
        entry = stream[body["data"]["sequence"] - 1]
        assert (entry["event"], entry["status"], entry["occurredAt"]) == (
            event, body["data"]["status"], now,
        )  # fmt: skip
    assert len(receiver.deliveries) == sum(1 for e in stream if e["event"] == event)
    assert all(e["occurredAt"] == now for e in stream), "stamped at the current mock time"
    job = api.get(f"/v1/jobs/{job_id}").json()["job"]
    expected = status or TERMINAL.get(event)
    if expected:
        assert job["status"] == expected
    elif event == "job.awaiting_approval":
        assert job["status"] == "awaiting_approval"
    assert job_id in {j["id"] for j in api.get("/v1/jobs", params={"limit": 100}).json()["jobs"]}
    assert ledger(api) == before, "a triggered event spends no credits and writes no usage"


def test_the_trigger_operation_answers_the_job_its_events_and_its_deliveries(live, receiver):
    api, control = live
    subscribe(api, f"{receiver.url}/all", EVENTS)
    answer = control.call("POST", "/events/trigger", {"event": "publish.failed"})
    control_validator("/_mock/events/trigger", "post").validate(answer)
    assert answer["workspace"] == "acme" and answer["status"] == "failed"
    deliveries = control.call("GET", "/deliveries?limit=1000")["deliveries"]
    mine = [d for d in deliveries if d["id"] in answer["deliveries"]]
    assert [d["event"] for d in mine] == [
        e["event"] for e in answer["events"] if e["event"].startswith("publish.")
    ]  # a publish notifies only its own end
    stream = api.get(f"/v1/jobs/{answer['jobId']}/events", params={"limit": 100}).json()
    assert stream["events"] == answer["events"]
    globex = control.call(
        "POST", "/events/trigger", {"event": "job.completed", "key": KEYS["globex"]}
    )
    assert globex["workspace"] == "globex" and globex["deliveries"] == []
    assert api.get(f"/v1/jobs/{globex['jobId']}", key="globex").status_code == 200
    assert api.get(f"/v1/jobs/{globex['jobId']}").status_code == 404


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"event": "job.exploded"}, "unknown_event"),
        ({"event": "job.failed", "status": "done"}, "status_not_applicable"),
        ({"event": "job.progressed", "status": "failed"}, "status_not_applicable"),
    ],
)
def test_trigger_refuses_what_no_job_sends(live_server, body, reason):
    response = httpx.post(f"{live_server.base_url}/_mock/events/trigger", json=body)
    assert response.status_code == 400
    assert response.json()["details"]["reason"] == reason


def test_trigger_list_names_the_contract_events(capsys):
    code, out, _ = run_cli(["trigger", "--list"], capsys)
    assert code == 0 and out.split() == EVENTS


def test_trigger_without_a_running_mock_says_so(capsys):
    code, _, err = run_cli(["trigger", "job.completed", "--url", "http://127.0.0.1:9"], capsys)
    assert code == 1 and "cannot reach the mock" in err


def test_trigger_in_a_sandbox_touches_only_that_sandbox(live, live_server, receiver, capsys):
    api, control = live
    sandbox = control.call("POST", "/sandboxes", {"workspace": "acme"})["sandbox"]
    owner = next(k["key"] for k in sandbox["keys"] if k["role"] == "owner")
    try:
        subscribe(api, f"{receiver.url}/sandbox", ["job.completed"], key=owner)
        subscribe(api, f"{receiver.url}/default", ["job.completed"])
        jobs_before = api.get("/v1/jobs", params={"limit": 100}).json()["jobs"]
        argv = ["trigger", "job.completed", "--url", live_server.base_url]
        code, out, err = run_cli([*argv, "--sandbox", sandbox["id"]], capsys)
        assert code == 0, err
        job_id = triggered_job(out)
        query = f"?sandbox={sandbox['id']}"
        flush(control, query)
        flush(control)
        assert {d.path for d in receiver.deliveries} == {"/sandbox"}
        assert control.call("GET", "/deliveries")["deliveries"] == []
        assert api.get("/v1/jobs", params={"limit": 100}).json()["jobs"] == jobs_before
        assert api.get(f"/v1/jobs/{job_id}").status_code == 404
        assert api.get(f"/v1/jobs/{job_id}", key=owner).json()["job"]["status"] == "done"
    finally:
        control.call("DELETE", f"/sandboxes/{sandbox['id']}")


# -- listen, end to end ------------------------------------------------------------------------


class Process:
    """A subprocess whose stdout lines are read in the background."""

    def __init__(self, argv: list[str]) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "mockserver", *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.lines.put(line.rstrip("\n"))

    def expect(self, pattern: str, timeout: float = 20) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = self.lines.get(timeout=max(0.01, left))
            except queue.Empty:
                raise AssertionError(f"no line like {pattern!r}; saw {self.seen}") from None
            self.seen.append(line)
            match = re.search(pattern, line)
            if match:
                return match

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(timeout=10)


@pytest.fixture
def private_mock() -> Iterator[str]:
    """A mock started as users start it, WITHOUT --allow-private-callbacks."""
    mock = Process(["--port", "0", "--clock", "manual"])
    try:
        base = mock.expect(r"mockserver listening on (http://\S+)").group(1)
        yield base
    finally:
        mock.popen.send_signal(signal.SIGTERM)
        mock.popen.wait(timeout=15)


def test_listen_forwards_signed_deliveries_to_a_local_endpoint_and_cleans_up(
    private_mock, receiver
):
    base = private_mock
    http = httpx.Client(base_url=base, timeout=30)
    api, control = ApiClient(http), ControlClient(http)
    refused = api.post(
        "/v1/webhook-subscriptions",
        json={"url": f"{receiver.url}/direct", "events": EVENTS, "secret": SECRET},
        headers={"Idempotency-Key": "direct"},
    )
    assert refused.status_code == 400, "this mock does not let ordinary webhooks reach loopback"

    listen = Process(
        ["listen", "--url", base, "--forward-to", f"{receiver.url}/local",
         "--events", "job.completed,job.cancelled"]
    )  # fmt: skip
    try:
        receive_at = listen.expect(r"listening on (http://127\.0\.0\.1:\d+/) for ").group(1)
        secret = listen.expect(r"signing secret (\S+)").group(1)
        listen.expect(r"ready")
        subscriptions = api.get("/v1/webhook-subscriptions").json()["subscriptions"]
        assert [(s["description"], s["url"], s["events"]) for s in subscriptions] == [
            ("mockserver listen", receive_at, ["job.completed", "job.cancelled"])
        ]
        assert "secret" not in subscriptions[0]

        # One delivery per event subscribed to, each line with its verdict and the answer.
        job = control.call("POST", "/events/trigger", {"event": "job.completed"})
        control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
        line = listen.expect(r"job\.completed")
        event_id = json.loads(receiver.deliveries[0].body)["eventId"]
        assert re.fullmatch(
            rf"{control.now()}\s+job\.completed\s+{event_id}\s+signature ok\s+-> 200",
            line.string,
        ), line.string
        assert len(receiver.deliveries) == 1, "only the events asked for (not job.progressed)"

        # Byte for byte, with the X-Service-* headers, as the mock recorded it.
        forwarded = receiver.deliveries[0]
        recorded = [d for d in control.call("GET", "/deliveries")["deliveries"]
                    if d["id"] in job["deliveries"]]  # fmt: skip
        assert [(d["event"], d["state"], d["attempts"][-1]["status"]) for d in recorded] == [
            ("job.completed", "delivered", 200)
        ]
        snapshot = control.call("GET", "/snapshot")["snapshot"]
        assert forwarded.body == snapshot["deliveries"][recorded[0]["id"]]["body"].encode()
        assert forwarded.path == "/local"
        assert forwarded.headers["x-service-event-id"] == recorded[0]["eventId"]
        assert forwarded.headers["x-service-subscription-id"] == subscriptions[0]["id"]
        assert verify(
            secret, forwarded.headers["x-service-timestamp"], forwarded.body,
            forwarded.headers["x-service-signature"],
        )  # fmt: skip

        # A 503 from the local endpoint goes back to the mock, which retries as in production.
        receiver.clear()
        receiver.script([503])
        cancelled = control.call("POST", "/events/trigger", {"event": "job.cancelled"})
        control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
        assert re.search(r"signature ok\s+-> 503$", listen.expect(r"job\.cancelled").string)
        (first,) = [d for d in control.call("GET", "/deliveries")["deliveries"]
                    if d["id"] in cancelled["deliveries"]]  # fmt: skip
        assert first["state"] == "pending" and first["attempts"][0]["status"] == 503
        control.advance(600)
        control.call("POST", "/deliveries/flush", {"timeoutSeconds": 15})
        assert re.search(r"signature ok\s+-> 200$", listen.expect(r"job\.cancelled").string)
        (again,) = [d for d in control.call("GET", "/deliveries")["deliveries"]
                    if d["id"] == first["id"]]  # fmt: skip
        assert again["state"] == "delivered" and [a["status"] for a in again["attempts"]] == [
            503, 200,
        ]  # fmt: skip
        assert len({d.body for d in receiver.deliveries}) == 1 and len(receiver.deliveries) == 2

        # A delivery that is not signed with the listener's secret is called out.
        forged = receiver.deliveries[0]
        headers = {k: v for k, v in forged.headers.items() if k.startswith("x-service-")}
        httpx.post(receive_at, content=forged.body + b" ", headers=headers, timeout=10)
        assert re.search(r"signature BAD\s+-> 200$", listen.expect(r"job\.cancelled").string)

        # Ctrl-C: the subscription goes, and listen exits 0.
        listen.popen.send_signal(signal.SIGINT)
        assert listen.popen.wait(timeout=15) == 0
        listen.expect(r"stopped; subscription whk_\w+ deleted")
        assert api.get("/v1/webhook-subscriptions").json()["subscriptions"] == []
    finally:
        listen.stop()
        http.close()


def test_listen_without_a_forward_target_verifies_and_prints(private_mock):
    """The first-hour path of the README: listen, trigger, see a verified delivery."""
    listen = Process(["listen", "--url", private_mock, "--events", "job.completed"])
    try:
        listen.expect(r"not forwarding")
        listen.expect(r"ready")
        trigger = Process(["trigger", "job.completed", "--url", private_mock])
        assert trigger.popen.wait(timeout=30) == 0
        httpx.post(f"{private_mock}/_mock/deliveries/flush", json={}, timeout=30)
        line = listen.expect(r"job\.completed").string
        assert re.search(r"signature ok\s+-> 200 \(not forwarded\)$", line), line
        delivered = httpx.get(f"{private_mock}/_mock/deliveries", timeout=10).json()
        assert [d["state"] for d in delivered["deliveries"]] == ["delivered"]
        listen.popen.send_signal(signal.SIGINT)
        assert listen.popen.wait(timeout=15) == 0
    finally:
        listen.stop()


def test_listener_urls_are_loopback_only(live_server):
    response = httpx.post(
        f"{live_server.base_url}/_mock/listeners", json={"url": "https://8.8.8.8/hooks"}
    )
    assert response.status_code == 400
    assert response.json()["details"] == {
        "reason": "url_not_allowed", "field": "url", "rule": "not_loopback",
    }  # fmt: skip
    other = httpx.delete(f"{live_server.base_url}/_mock/listeners/whk_nothing")
    assert other.status_code == 404


def test_serve_takes_the_delivery_lease():
    parse = cli.build_serve_parser().parse_args
    assert parse([]).delivery_lease is None
    assert cli.settings_from(parse(["--delivery-lease", "2.5"]), 0).delivery_lease == 2.5
    for bad in ("1.9", "0", "-1", "nan", "inf", "soon"):
        with pytest.raises(SystemExit):
            parse(["--delivery-lease", bad])
    default, short = create_app(Settings()), create_app(Settings(delivery_lease=2))
    try:
        assert default.runtime.delivery.lease == 15, "the contract's attempt timeout plus 5 s"
        assert short.runtime.delivery.lease == 2
    finally:
        default.close()
        short.close()


def test_serve_takes_the_sandbox_ttl_and_limit():
    mock = Process(
        ["--port", "0", "--clock", "manual", "--sandbox-ttl", "1", "--max-sandboxes", "1"]
    )
    try:
        base = mock.expect(r"mockserver listening on (http://\S+)").group(1)
        first = httpx.post(f"{base}/_mock/sandboxes", timeout=10)
        assert first.status_code == 200, first.text
        second = httpx.post(f"{base}/_mock/sandboxes", timeout=10)
        assert second.status_code == 409
        assert second.json()["details"] == {"reason": "sandbox_limit", "limit": 1}
        time.sleep(1.5)  # the first one idles past its ttl and ends
        assert httpx.post(f"{base}/_mock/sandboxes", timeout=10).status_code == 200
        defaults = cli.build_serve_parser().parse_args([])
        assert (defaults.sandbox_ttl, defaults.max_sandboxes) == (3600, 64)
        for bad in (["--max-sandboxes", "0"], ["--sandbox-ttl", "-1"]):
            with pytest.raises(SystemExit):
                cli.build_serve_parser().parse_args(bad)
    finally:
        mock.popen.send_signal(signal.SIGTERM)
        assert mock.popen.wait(timeout=15) == 0
