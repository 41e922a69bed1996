"""Webhook checks against a deployment without a control plane (a fake that delivers in real
time to the suite's receiver), and the receiver itself."""

from __future__ import annotations

import httpx
import pytest

from conformance.receiver import Receiver
from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import Served, free_port, run_quietly

CHECK = "webhooks-subscription-deliveries"


def run_hooks(**defects: bool):
    port = free_port()
    receiver = f"http://127.0.0.1:{port}"
    fake = FakeDeployment(receiver_prefix=receiver + "/", **defects)
    with Served(fake) as server:
        report = run_quietly(
            base_url=server.base_url,
            api_key=KEY,
            allow_spend=True,
            only=["webhooks"],
            receiver_listen=f"127.0.0.1:{port}",
            receiver_url=receiver,
            webhook_wait=10,
        )
    return report, fake


def test_a_conforming_deployment_passes_the_webhook_checks():
    report, fake = run_hooks()
    result = report.result(CHECK)
    assert result.status == "passed", [f.message for f in report.failures]
    statuses = [d["status"] for d in fake.deliveries]
    assert statuses.count(503) == 1 and statuses.count(400) == 1  # the receiver's script ran
    policy = report.result("webhooks-url-policy")
    # loopback, private, plain http (a subscription secret's bound is inferred: not probed)
    assert policy.status == "passed" and policy.passed == 3
    assert report.result("webhooks-callback-deliveries").status == "skipped"


@pytest.mark.parametrize(
    ("defect", "rule"),
    [
        ("sign_reserialised", "signature"),
        ("echo_secret", "secret-not-echoed"),
        ("retry_after_400", "no-retry-after-400"),
        ("new_event_id_on_retry", "retry-same-event-id"),
    ],
)
def test_a_broken_delivery_rule_fails_the_check(defect: str, rule: str):
    report, _ = run_hooks(**{defect: True})
    rules = {f.rule for f in report.result(CHECK).failures}
    assert rule in rules, [f.message for f in report.failures]
    assert report.exit_code == 1


def test_without_a_receiver_url_deliveries_are_skipped_for_a_real_deployment():
    with Served(FakeDeployment()) as server:
        report = run_quietly(base_url=server.base_url, api_key=KEY, allow_spend=True, only=[CHECK])
    assert report.result(CHECK).skipped == {
        "needs --receiver-url (the receiver's public HTTPS address)": 1
    }


def test_the_receiver_keeps_raw_bytes_and_answers_as_scripted():
    with Receiver() as receiver:
        url = receiver.route("/hook", lambda path, headers, body, seen: 503 if not seen else 204)
        raw = b'{"b": 1,  "a": "caf\xc3\xa9"}\n'
        first = httpx.post(url, content=raw, headers={"X-Service-Event": "job.completed"})
        second = httpx.post(url, content=raw)
        unknown = httpx.post(receiver.url + "/elsewhere", content=b"{}")
    assert (first.status_code, second.status_code, unknown.status_code) == (503, 204, 404)
    deliveries = receiver.received("/hook")
    assert [d.body for d in deliveries] == [raw, raw]
    assert deliveries[0].header("X-Service-Event") == "job.completed"
