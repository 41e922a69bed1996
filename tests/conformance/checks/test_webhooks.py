"""Webhook checks against a deployment without a control plane (a fake that delivers in real
time to the suite's receiver), and the receiver itself."""

from __future__ import annotations

import httpx
import pytest

from conformance.checks.webhooks import PRIVATE_RECEIVER
from conformance.receiver import Receiver
from conformance.skips import CAPABILITY_UNAVAILABLE
from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import Served, free_port, run_quietly

CHECK = "webhooks-subscription-deliveries"
POLICY = "webhooks-url-policy"


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
    # the receiver is on loopback: the deployment must accept it, so the url rules are not
    # judged (a subscription secret's bound is inferred: not probed)
    assert policy.status == "skipped" and not policy.failures
    assert any(
        r.startswith("the deployment must accept the suite's private") for r in policy.skipped
    )
    assert report.result("webhooks-callback-deliveries").status == "skipped"


@pytest.mark.parametrize("receiver", [None, "https://93.184.215.14/hooks"])
def test_the_url_policy_is_judged_where_the_receiver_is_public(receiver: str | None):
    with Served(FakeDeployment()) as server:
        report = run_quietly(
            base_url=server.base_url, api_key=KEY, receiver_url=receiver, only=[POLICY]
        )
    policy = report.result(POLICY)
    # loopback, private, plain http (the callback operations: capability unavailable)
    assert policy.status == "passed" and policy.passed == 3
    assert policy.skipped == {CAPABILITY_UNAVAILABLE: 4}


@pytest.mark.parametrize(
    ("receiver", "why"),
    [
        ("http://127.0.0.1:9/hooks", "plain http"),
        ("https://10.20.30.40/hooks", "10.20.30.40 at 10.20.30.40, not public"),
        ("https://localhost:9/hooks", "localhost at 127.0.0.1, not public"),
    ],
)
def test_a_private_receiver_is_recognised(receiver: str, why: str):
    with Served(FakeDeployment()) as server:
        report = run_quietly(
            base_url=server.base_url, api_key=KEY, receiver_url=receiver, only=[POLICY]
        )
    skipped = report.result(POLICY).skipped
    assert skipped[PRIVATE_RECEIVER.format(url=receiver, why=why)] == 6  # 3 urls, 2 operations


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
