"""A verdict within a budget: ``--time-budget`` plans the run at the announced rate limit, the
deadline holds every wait and request, and breadth comes before depth (conformance/plan.py).

The mock runs on its manual clock and is addressed as a deployment (``--base-url``: the suite
never uses its control plane). The run's clock is the test's: a sleep moves it, and moves the
mock's clock as much, so rate windows reset and jobs progress while nobody sleeps.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checks import all_checks
from conformance.cli import build_parser, main
from conformance.plan import Plan
from conformance.results import Report
from conformance.target import BUDGET_USED_UP, KEYED, TIME_BUDGET_USED_UP, Exchange
from tests.conformance.support import GLOBEX, OWNER, live_mock, run_quietly

EDITOR = "sk_test_acme_editor"
KEYS = {"api_key": OWNER, "second_key": GLOBEX, "restricted_key": EDITOR}


class Clock:
    """The run's clock: ``sleep`` moves it and the mock's clock; ``tick`` seconds pass at
    every reading (a deployment where everything takes time)."""

    def __init__(self, tick: float = 0.0) -> None:
        self.mock_url = ""  # set when the mock is up
        self.tick = tick
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        self.now += self.tick
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        httpx.post(
            f"{self.mock_url}/_mock/clock/advance", json={"seconds": seconds}
        ).raise_for_status()


def _run(clock: Clock, rate_limit: int = 100000, **options: Any) -> Report:
    """A run against the mock (manual clock, ``rate_limit`` a minute) as a deployment, on
    ``clock``."""
    with live_mock(rate_limit=rate_limit) as mock:
        clock.mock_url = mock.base_url
        return run_quietly(
            base_url=mock.base_url, clock=clock, sleep=clock.sleep, **KEYS, **options
        )


def _judged(report: Any) -> set[str]:
    return {c.name for c in report.checks if c.judgements}


# -- the plan ---------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    hours=st.integers(0, 3),
    minutes=st.integers(0, 59),
    seconds=st.integers(0, 59),
    plain=st.booleans(),
)
def test_the_time_budget_parses_as_a_duration(hours, minutes, seconds, plain):
    total = hours * 3600 + minutes * 60 + seconds
    if plain:
        text = str(total)
    else:
        text = "".join(f"{n}{u}" for n, u in ((hours, "h"), (minutes, "m"), (seconds, "s")) if n)
    args = ["run", "--base-url", "http://127.0.0.1:1", "--api-key", "k", "--time-budget", text]
    if total == 0:
        with pytest.raises(SystemExit) as refused:
            build_parser().parse_args(args)
        assert refused.value.code == 2
    else:
        assert build_parser().parse_args(args).time_budget == total


@pytest.mark.parametrize("text", ["soon", "10x", "-5m", "1h30", "0s", ""])
def test_a_time_budget_that_is_no_duration_is_a_usage_error(text, capsys):
    with pytest.raises(SystemExit) as refused:
        main(["run", "--base-url", "http://127.0.0.1:1", "--api-key", "k", "--time-budget", text])
    assert refused.value.code == 2
    assert "--time-budget" in capsys.readouterr().err


def test_the_run_is_planned_at_the_announced_rate(tmp_path: Path):
    # 30 requests a minute, the window fresh at the preflight's first authenticated read; its
    # two keyed reads and the plan's own leave 27 in it, then 30 a minute in what is left of 3
    # minutes less the 10% margin (162 s): 27 + 51.
    plans: list[Plan] = []
    report = _run(
        Clock(),
        rate_limit=30,
        time_budget=180,
        only=["auth-public-contract", "pagination-limit-bounds"],
        on_event=lambda event, payload: plans.append(payload) if event == "plan" else None,
    )
    assert [p.requests for p in plans] == [78]
    assert plans[0].rate is not None and plans[0].rate.limit == 30 and plans[0].rate.window == 60
    assert any(
        n.startswith("planned 78 requests (at the announced 30 requests per 60 s")
        for n in report.notes
    )


def test_against_the_bundled_mock_the_rate_bounds_no_time():
    # The run moves the mock's clock through a rate window: at 100 a minute, a minute would
    # plan 99 requests; against the mock the plan is --max-requests, less the preflight's two.
    plans: list[Plan] = []
    with live_mock() as mock:
        run_quietly(
            mock_url=mock.base_url,
            time_budget=60,
            max_requests=200,
            only=["auth-public-contract"],
            on_event=lambda event, payload: plans.append(payload) if event == "plan" else None,
        )
    assert [(p.requests, p.rate) for p in plans] == [(198, None)]


def test_the_command_line_plans_with_the_time_budget(tmp_path: Path):
    out = tmp_path / "report.json"
    with live_mock(rate_limit=30, clock="real") as mock, pytest.raises(SystemExit) as ended:
        main(["run", "--base-url", mock.base_url, "--api-key", OWNER, "--time-budget", "1h",
              "--max-requests", "500", "--only", "auth-public-contract", "--no-progress",
              "--report-json", str(out)])  # fmt: skip
    assert ended.value.code == 0
    notes = json.loads(out.read_text())["notes"]
    # --max-requests bounds the whole run: the preflight's two requests came out of it
    assert any(n.startswith("planned 498 requests") and "--max-requests 498" in n for n in notes)


# -- the deadline -----------------------------------------------------------------------------


def test_waits_that_would_end_after_the_deadline_are_not_made(tmp_path: Path):
    # Jobs are polled every 30 s: the first poll's wait fits in 45 s, the second does not
    # (--job-wait given: its default, four fifths of the budget, would end the polls first).
    out = tmp_path / "report.json"
    clock = Clock()
    report = _run(
        clock,
        time_budget=45,
        job_wait=600,
        allow_spend=True,
        only=["jobs-status-closed-set", "auth-public-contract"],
        report_json=out,
    )
    assert sum(clock.slept) <= 45 and clock.slept
    jobs = report.result("jobs-status-closed-set")
    assert jobs is not None and jobs.skipped[TIME_BUDGET_USED_UP]
    assert report.result("auth-public-contract").status == "passed"  # the run went on
    written = json.loads(out.read_text())
    assert TIME_BUDGET_USED_UP in written["checks"][0]["skipped"] or any(
        TIME_BUDGET_USED_UP in c["skipped"] for c in written["checks"]
    )
    assert any(n.startswith("the time budget ended the run's waits") for n in written["notes"])


def test_no_request_is_sent_after_the_deadline(tmp_path: Path):
    # A slow deployment: a second passes at every reading of the clock.
    out = tmp_path / "report.json"
    sent: list[float] = []

    def listen(event: str, payload: Any) -> None:
        if event == "exchange":
            assert isinstance(payload, Exchange)
            sent.append(clock.now)

    clock = Clock(tick=1.0)
    report = _run(
        clock, time_budget=40, only=["auth", "pagination"], on_event=listen, report_json=out
    )
    assert sent and max(sent) < 40  # the clock as it was read to send each request
    stopped = [c.name for c in report.checks if c.skipped[TIME_BUDGET_USED_UP]]
    assert len(stopped) >= 3, stopped
    assert out.exists() and json.loads(out.read_text())["verdict"] == report.verdict


# -- pacing at the rate limit -----------------------------------------------------------------


def test_a_paced_run_takes_its_requests_over_the_rate_limit_in_about_that_time():
    # 20 a minute: N keyed requests take (N / 20 - 1) windows of waiting, at most.
    sent: list[Exchange] = []
    clock = Clock()
    report = _run(
        clock,
        rate_limit=20,
        max_requests=120,
        only=["auth", "pagination"],
        on_event=lambda event, payload: sent.append(payload) if event == "exchange" else None,
    )
    keyed = [e for e in sent if e.auth in KEYED]
    assert report.requests > 60 and len(keyed) > 40
    assert [e for e in sent if e.status == 429] == []  # paced, never refused
    minutes = sum(clock.slept) / 60
    assert 0 < minutes <= len(keyed) / 20, (minutes, len(keyed))


# -- breadth, then depth ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def unbounded() -> Report:
    return _run(Clock(), allow_spend=True)


@pytest.fixture(scope="module", params=[600, 320])
def bounded(request: pytest.FixtureRequest) -> Report:
    """600: the issue's target. 320: where the breadth pass's allowances cut checks that need
    more than an equal share (auth-openapi-not-rate-limited needs 8 at once), and their retry
    before any depth is what lets them judge. (It grows with the checks: each keeps
    ``RESERVE`` requests for those after it; 300 until the two checks of calls at once.)"""
    return _run(Clock(), allow_spend=True, max_requests=request.param)


def test_every_check_that_judges_unbounded_judges_within_the_budget(unbounded, bounded):
    assert unbounded.requests > 1000 and bounded.requests <= bounded.max_requests
    missed = _judged(unbounded) - _judged(bounded)
    # A rate-limit probe takes a whole window (103 requests at the stated limit) from what the
    # budget has left after every other check judged once; 320 leaves less than that.
    probes = {c.name for c in all_checks() if c.window}
    if bounded.max_requests < 400:
        for name in missed & probes:
            assert bounded.result(name).skipped == {BUDGET_USED_UP: 1}, name
        missed -= probes
    assert sorted(missed) == []


def test_a_check_that_judged_shows_no_request_budget_used_up(bounded):
    assert [c.name for c in bounded.checks if c.judgements and c.skipped[BUDGET_USED_UP]] == []
    cut = [n for n in bounded.notes if n.startswith("the request budget cut short the depth")]
    assert cut and "schema-positive" in cut[0]  # depth was cut, and the run says so


def test_job_wait_by_default_fits_the_time_budget():
    # Without --job-wait, the polls of a job take four fifths of a 45 s budget at most (36 s):
    # the job checks skip naming that wait, before the deadline, and the run goes on.
    clock = Clock()
    report = _run(
        clock,
        time_budget=45,
        allow_spend=True,
        only=["jobs-status-closed-set", "auth-public-contract"],
    )
    jobs = report.result("jobs-status-closed-set")
    assert jobs is not None and not jobs.failures
    assert any("within --job-wait (36 s)" in reason for reason in jobs.skipped), jobs.skipped
    assert report.result("auth-public-contract").status == "passed"
