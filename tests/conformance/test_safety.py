"""Safe by default: no paid or creating call without --allow-spend; the budget; Retry-After."""

from __future__ import annotations

import re

import httpx
from hypothesis import given
from hypothesis import strategies as st

from conformance.skips import NEEDS_CREATE, NEEDS_SPEND
from conformance.target import BUDGET_USED_UP, Target
from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import GLOBEX, OWNER, Served, live_mock, run_quietly, skip_reasons

WRITES = {"POST", "PUT", "PATCH", "DELETE"}


def test_without_allow_spend_every_write_sent_to_a_deployment_is_refused():
    # The bundled mock, addressed as any deployment (no control plane): its request journal
    # shows every request the suite made. A generous rate limit keeps the test fast.
    with live_mock(rate_limit=100000, allow_private_callbacks=False) as mock:
        report = run_quietly(
            base_url=mock.base_url,
            api_key=OWNER,
            second_key=GLOBEX,
            max_requests=500,
            # the rate-limit probes hold a deployment to the stated 100 a minute, not this one's
            skip=["schema-positive", "rate-limit"],
        )
        journal = httpx.get(f"{mock.base_url}/_mock/requests", params={"limit": 1000}).json()
    writes = [r for r in journal["requests"] if r["method"] in WRITES]
    assert len(writes) > 20  # validation probes were sent…
    accepted = [r for r in writes if not 400 <= r["status"] < 500]
    assert accepted == []  # …and every one of them was refused before any charge
    reasons = skip_reasons(report)
    assert NEEDS_SPEND in reasons and NEEDS_CREATE in reasons
    skipped = {c.name for c in report.checks if c.status == "skipped"}
    assert {"idempotency-replay", "schema-stateful", "webhooks-subscription-deliveries"} <= skipped
    assert report.ok, [f"{f.check}: {f.message}" for f in report.failures]


def test_positive_generation_skips_paid_and_creating_operations_without_allow_spend():
    fake = FakeDeployment()
    with Served(fake) as server:
        report = run_quietly(
            base_url=server.base_url, api_key=KEY, only=["schema-positive"], max_requests=300
        )
    assert fake.log, "the run sent requests"
    assert all(entry["method"] == "GET" for entry in fake.log)
    result = report.result("schema-positive")
    assert result.skipped[NEEDS_SPEND] > 5 and result.skipped[NEEDS_CREATE] > 5


def test_the_request_budget_bounds_the_run():
    with live_mock() as mock:
        report = run_quietly(mock_url=mock.base_url, max_requests=60, only=["auth", "pagination"])
    assert report.requests <= 60
    assert BUDGET_USED_UP in skip_reasons(report)


def test_retry_after_is_honoured_by_waiting_then_retrying():
    fake = FakeDeployment(retry_after_once=7)
    waits: list[float] = []
    with Served(fake) as server:
        report = run_quietly(
            base_url=server.base_url, api_key=KEY, only=["envelope-json"], sleep=waits.append
        )
    assert waits == [7]
    assert any("waited 7 s" in note for note in report.notes)
    calls = [
        e for e in fake.log if e["path"] == "/v1/capabilities" and "authorization" in e["headers"]
    ]
    assert len(calls) >= 2  # the 429, then the retry
    assert report.ok, [f.message for f in report.failures]


def test_a_long_retry_after_is_capped_and_said():
    fake = FakeDeployment(retry_after_once=3600)
    waits: list[float] = []
    with Served(fake) as server:
        report = run_quietly(
            base_url=server.base_url,
            api_key=KEY,
            only=["envelope-json"],
            sleep=waits.append,
            wait_cap=30,
        )
    assert waits == [30]
    assert any("capped from 3600 s" in note for note in report.notes)


@given(seconds=st.floats(min_value=0.05, max_value=120, allow_nan=False))
def test_waits_are_noted_rounded(seconds: float):
    # A rate window's wait is what is left of it on the run's clock (59.9993 s): the note says
    # 60 s, whole seconds from 10 s up, a tenth below, never a float's noise.
    slept: list[float] = []
    target = Target("http://deployment.invalid", KEY, sleep=slept.append)
    target.wait(seconds, "the rate-limit window to reset")
    (note,) = target.notes
    shown = note.removeprefix("waited ").partition(" s")[0]
    assert slept == [seconds]
    assert re.fullmatch(r"\d+" if seconds >= 10 else r"\d+(\.\d)?", shown), note
    tolerance = (0.5 if seconds >= 10 else 0.05) + 1e-9  # half the unit shown, float error aside
    assert abs(float(shown) - seconds) <= tolerance
