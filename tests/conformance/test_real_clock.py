"""Real clocks: jobs that take minutes, polled at the recommended interval up to --job-wait,
deliveries waited for up to --webhook-wait, and the prepare phase that starts long jobs before
the other checks run.

The bundled mock is reached as a deployment (``--base-url``: the suite never uses its control
plane) on its manual clock, and the run's ``sleep`` moves that clock through the control plane
(then makes the deliveries that fell due): real time, simulated, so that no test sleeps. A job
of the mock's own durations (a render: 375 s) finishes only when the run waits for it.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.checks.jobs import HELD
from conformance.results import Report
from conformance.target import Exchange, Wait
from mockserver.testing import MockServer
from tests.conformance.support import GLOBEX, OWNER, free_port, live_mock, run_quietly

JOBS = "jobs-status-closed-set"
APPROVE = "workflows-approve-generation"
CALLBACK = "webhooks-callback-deliveries"
SUBSCRIPTION = "webhooks-subscription-deliveries"
COVERAGE = "webhooks-subscription-coverage"
DEPRECATED = "schema-deprecated-fields"
PREPARED = (APPROVE, JOBS, SUBSCRIPTION, CALLBACK, COVERAGE, DEPRECATED)  # in family order
# checks without jobs, of families before and after the prepared checks' families
QUICK = ("envelope-json", "auth-cross-workspace", "limits-capabilities-free")
TERMINAL = ("done", "cancelled", "failed", "qa_failed")  # JobTerminalStatus
SHORT_SKIPS = {  # what each prepared check did not see within --job-wait 20
    JOBS: "no job reached a terminal state within --job-wait (20 s)",
    APPROVE: "the footage edit did not reach awaiting_review within --job-wait (20 s)",
}


@dataclass
class Timeline:
    """What the run did, on the mock's clock: the seconds it let pass, and every event."""

    plane: MockServer
    now: float = 0.0
    events: list[tuple[str, Any, float]] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        """Real time passing: the mock's clock moves, the deliveries due are made."""
        self.now += seconds
        self.plane.advance(seconds)
        self.plane.flush_deliveries()

    def listen(self, event: str, payload: Any) -> None:
        self.events.append((event, payload, self.now))

    def exchanges(self) -> list[tuple[Exchange, float]]:
        return [(p, at) for e, p, at in self.events if e == "exchange"]

    def waits(self, check: str) -> list[Wait]:
        return [p for e, p, _ in self.events if e == "wait" and p.check == check]

    def order(self, kind: str) -> list[str]:
        return [p.name for e, p, _ in self.events if e == kind]


@contextmanager
def simulated_deployment(**options: Any) -> Iterator[tuple[Report, Timeline]]:
    """Run against the mock reached as a deployment, with the suite's receiver on loopback."""
    port = free_port()
    with live_mock(rate_limit=100000) as mock:
        timeline = Timeline(MockServer(mock.base_url, []))
        options = {
            "base_url": mock.base_url,
            "api_key": OWNER,
            "second_key": GLOBEX,
            "allow_spend": True,
            "only": [*QUICK, *PREPARED],
            "receiver_listen": f"127.0.0.1:{port}",
            "receiver_url": f"http://127.0.0.1:{port}",
            "sleep": timeline.sleep,
            "on_event": timeline.listen,
        } | options
        yield run_quietly(**options), timeline


def _job_id(exchange: Exchange) -> str | None:
    body = exchange.json()
    job = body.get("job") if isinstance(body, dict) else None
    return job.get("id") if isinstance(job, dict) else None


def test_jobs_that_take_minutes_finish_and_are_judged():
    with simulated_deployment() as (report, timeline):
        pass
    assert report.failures == [], [f.message for f in report.failures]
    jobs = report.result(JOBS)
    assert jobs.status == "passed" and jobs.passed > 10
    # every job ended but the footage edit, which waits for a person to approve its cuts
    assert set(jobs.skipped) <= {HELD, "in-flight statuses are not enumerated for this profile"}
    approve = report.result(APPROVE)
    assert approve.status == "passed"
    assert approve.passed >= 4  # first approval, approved, render not ready, re-cut ...
    callback = report.result(CALLBACK)  # its render ended: its callback and retry judged
    assert callback.status == "passed" and not callback.skipped and callback.passed >= 8
    assert report.result(COVERAGE).status == "passed"
    # the run waited minutes of the mock's clock (a render alone takes 375 s), never really
    assert timeline.now >= 375


def test_jobs_are_polled_at_the_recommended_interval():
    with simulated_deployment(only=[JOBS]) as (_, timeline):
        pass
    reads: dict[str, list[float]] = {}  # job id -> when it was read, until it read ended
    ended: set[str] = set()
    for exchange, at in timeline.exchanges():
        job_id = _job_id(exchange)
        if exchange.operation_id == "getJob" and exchange.check == JOBS and job_id not in ended:
            reads.setdefault(str(job_id), []).append(at)
            if exchange.json()["job"]["status"] in TERMINAL:
                ended.add(str(job_id))
    gaps = [b - a for times in reads.values() for a, b in itertools.pairwise(times)]
    assert len(gaps) > 10 and len(ended) >= 5
    # "Recommended job polling interval: 15 to 30 seconds": never more often, never less
    assert all(15 <= gap <= 30 for gap in gaps), gaps
    waits = timeline.waits(JOBS)
    assert waits and all(15 <= w.seconds <= 30 for w in waits)
    assert all("job(s) to end" in w.why for w in waits)


def test_past_job_wait_the_checks_skip_with_the_reason_and_never_fail():
    with simulated_deployment(job_wait=20) as (report, timeline):
        pass
    assert report.failures == [], [f.message for f in report.failures]
    for name, reason in SHORT_SKIPS.items():
        result = report.result(name)
        assert result.status == "skipped" and reason in result.skipped, dict(result.skipped)
    callback = report.result(CALLBACK)
    assert callback.status == "passed"  # the callbackSecret is never echoed: judged at once
    assert any(
        r.startswith("the job with a callback")
        and r.endswith("did not end within --job-wait (20 s)")
        for r in callback.skipped
    ), dict(callback.skipped)
    for name in PREPARED:  # no check waited for its jobs longer than the wait
        polls = [w.seconds for w in timeline.waits(name) if "read every 30 s" in w.why]
        assert sum(polls) == (20 if name in SHORT_SKIPS else sum(polls)) <= 20, name


def test_past_webhook_wait_a_retry_not_seen_is_skipped_not_failed():
    # The render ends (--job-wait covers it); its callback comes, answered 503; the retry is due
    # 24 to 36 s later (x-limits.webhookDelivery), after the 10 s the run waits for it.
    with simulated_deployment(only=[CALLBACK], webhook_wait=10) as (report, timeline):
        pass
    callback = report.result(CALLBACK)
    assert callback.failures == [] and callback.passed > 0  # the first delivery is judged
    assert any(
        r.endswith("answered 503, was not delivered again within --webhook-wait (10 s)")
        for r in callback.skipped
    ), dict(callback.skipped)
    deliveries = [w for w in timeline.waits(CALLBACK) if "callback and its retry" in w.why]
    assert sum(w.seconds for w in deliveries) == 10


def test_the_prepare_phase_starts_long_jobs_first_and_their_checks_run_last():
    with simulated_deployment() as (report, timeline):
        pass
    assert timeline.order("prepare-start") == list(PREPARED)
    started = timeline.order("check-start")
    assert set(started[: len(QUICK)]) == set(QUICK)  # the other checks first ...
    assert started[len(QUICK) :] == list(PREPARED)  # ... the prepared last, in their order
    exchanges = [e for e, _ in timeline.exchanges()]
    first_other = next(i for i, e in enumerate(exchanges) if e.check in QUICK)
    before = exchanges[:first_other]
    assert {e.check for e in before} <= {None, *PREPARED}  # None: the contract's fetch
    # every prepared check started the jobs it waits for before the first other check ran
    started_jobs = {e.check for e in before if e.method == "POST" and _job_id(e) is not None}
    assert started_jobs == set(PREPARED)
    # a prepare's requests count as its check's
    for name in PREPARED:
        assert report.result(name).requests == sum(1 for e in exchanges if e.check == name)


def test_against_the_mock_each_prepare_runs_right_before_its_check():
    # With the control plane the world is reset before each check: no prepare phase.
    events: list[tuple[str, str]] = []

    def listen(event: str, payload: Any) -> None:
        if event in ("prepare-start", "check-start"):
            events.append((event, payload.name))

    with live_mock() as mock:
        report = run_quietly(mock_url=mock.base_url, only=[*QUICK, JOBS, APPROVE], on_event=listen)
    assert [e for e, _ in events] == ["check-start"] * len(events)
    assert [name for _, name in events] == [c.name for c in report.checks]
    assert report.result(JOBS).status == "passed" and report.result(APPROVE).status == "passed"


def test_a_prepare_that_skips_skips_its_check_with_the_reason():
    with simulated_deployment(receiver_url=None, only=[CALLBACK, *QUICK]) as (report, timeline):
        pass
    callback = report.result(CALLBACK)
    assert callback.status == "skipped" and callback.requests == 0
    # tried once, in the prepare phase; the check itself is not run
    assert callback.skipped == {"needs --receiver-url (the receiver's public HTTPS address)": 1}
    assert timeline.order("prepare-end") == [CALLBACK]


def test_job_wait_on_the_command_line(tmp_path: Path):
    # A process of its own, timed out: a --job-wait that did not count would wait in real time.
    path = tmp_path / "report.json"
    with live_mock(rate_limit=100000) as mock:
        argv = ["run", "--base-url", mock.base_url, "--api-key", OWNER, "--allow-spend",
                "--only", APPROVE, "--job-wait", "0", "--seed", "1",
                "--report-json", str(path)]  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "conformance", *argv],
            capture_output=True,
            timeout=120,
            cwd=Path(__file__).parents[2],
        )
    assert done.returncode == 3, done.stderr  # nothing judged
    check = next(c for c in json.loads(path.read_text())["checks"] if c["name"] == APPROVE)
    reason = "the footage edit did not reach awaiting_review within --job-wait (0 s)"
    assert reason in json.dumps(check)


def test_a_prepared_subscription_outlasts_the_checks_that_fuzz_subscriptions():
    # Made before schema-positive runs, it would be the first id that check is handed for the
    # subscription operations (PATCH its url, disable it, DELETE it): it is kept out of them.
    with simulated_deployment(only=[SUBSCRIPTION, "schema-positive"]) as (report, timeline):
        pass
    exchanges = [e for e, _ in timeline.exchanges()]
    made = next(e for e in exchanges if e.operation_id == "createWebhookSubscription")
    mine = made.json()["subscription"]["id"]
    assert not [e for e in exchanges if e.check != SUBSCRIPTION and mine in e.url]
    subscription = report.result(SUBSCRIPTION)
    assert subscription.status == "passed" and not subscription.skipped, dict(subscription.skipped)
