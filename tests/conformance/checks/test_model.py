"""The model-based check ``model-workspace``: it passes against the clean mock (with and without
the mock's control plane), makes the same requests for the same seed, keeps to the request
budget, and fails against a mock with a test-only defect (tests/defects/), naming the model's rule
it broke and giving the shrunk sequence as curl commands with the command that runs it again.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from conformance.api import RunConfig, run
from conformance.checks.model import MOCK_ONLY
from conformance.model import run as model_run
from conformance.outcomes import CheckResult
from conformance.results import Report
from tests.conformance.support import OWNER, live_mock, run_quietly

ONLY = ["model-workspace"]
SEEDS = (1, 2, 3, 4)  # a defect is caught when one of these seeds catches it

#: defects of the overlay (tests/defects/) -> the rule of the model each breaks
DEFECT_RULES = {
    "refused-call-charged": "ledger",
    "charge-differs-from-quote": "ledger",
    "replay-charges-twice": "replay",
    "replay-creates-again": "replay",
    "failed-call-holds-key": "key-freed",
    "channel-patch-resets-unsent": "partial-update",
    "products-none-as-empty": "products-none",
    "job-status-outside-set": "job-status",
    "job-leaves-terminal": "terminal-final",
    "job-events-out-of-order": "event-sequence",
    "repeat-item-across-pages": "walk-once",
    "render-delivered-to-subscriptions": "subscription-coverage",
}


def model_result(report: Report) -> CheckResult:
    return next(c for c in report.checks if c.name == "model-workspace")


def failures_of(report: Report) -> list[str]:
    return [f"{f.rule}: {f.message}" for f in report.failures]


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with live_mock() as mock:
        yield mock.base_url


def test_the_clean_mock_passes(mock_url: str):
    report = run_quietly(mock_url=mock_url, only=ONLY)
    result = model_result(report)
    assert report.ok, failures_of(report)
    assert result.status == "passed" and result.passed > 50
    unjudged = {reason.split(":")[0] for reason in result.skipped}
    assert not unjudged & {"ledger", "replay", "job-status", "partial-update"}, result.skipped


def test_without_the_control_plane_it_passes_and_says_what_it_left_out():
    """A deployment that is not the bundled mock: no reset, no clock, no credits set; records
    that existed before the run are never changed."""
    with live_mock(clock="real", rate_limit=100_000) as mock:
        report = run_quietly(
            base_url=mock.base_url, api_key=OWNER, allow_spend=True, only=ONLY, max_requests=150
        )
    result = model_result(report)
    assert report.ok, failures_of(report)
    assert result.passed > 0
    assert MOCK_ONLY in result.skipped
    assert any(reason.startswith("subscription-coverage:") for reason in result.skipped)


def _requests(mock_url: str, seed: int) -> list[tuple[str, str]]:
    sent: list[tuple[str, str]] = []

    def listen(event: str, value: Any) -> None:
        if event == "exchange":
            sent.append((value.method, value.path))

    run(RunConfig(mock_url=mock_url, only=ONLY, seed=seed, on_event=listen))
    return sent


def test_the_same_seed_makes_the_same_requests(mock_url: str):
    first = _requests(mock_url, 5)
    assert len(first) > 50
    assert _requests(mock_url, 5) == first
    assert _requests(mock_url, 6) != first


@pytest.mark.parametrize("budget", [12, 60, 150])
def test_the_budget_is_kept(mock_url: str, budget: int):
    report = run_quietly(mock_url=mock_url, only=ONLY, max_requests=budget)
    result = model_result(report)
    assert report.requests <= budget
    assert not result.failures, failures_of(report)
    assert result.skipped  # at least: the budget, or what it had no budget left to judge


def caught(url: str, rule: str) -> tuple[int, Report]:
    """The first seed whose run breaks the model's ``rule``, and that run."""
    report = None
    for seed in SEEDS:
        report = run_quietly(mock_url=url, only=ONLY, seed=seed)
        if any(f.rule == rule for f in model_result(report).failures):
            return seed, report
    raise AssertionError(f"{rule} held with seeds {SEEDS}: {report and failures_of(report)}")


@pytest.mark.parametrize("defect", sorted(DEFECT_RULES))
def test_a_broken_rule_is_named_with_its_steps(defect: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(model_run, "SHRINK_REPLAYS", 30)  # the rule, not the shrinking, here
    with live_mock(defects=[defect]) as mock:
        seed, report = caught(mock.base_url, DEFECT_RULES[defect])
    assert report.exit_code == 1
    failure = next(f for f in model_result(report).failures if f.rule == DEFECT_RULES[defect])
    assert failure.quote and failure.exchange is not None
    steps = failure.extra["steps"]
    assert 0 < len(steps) <= model_run.REQUESTS_PER_STEP * model_run.DEFAULT_STEPS * 2
    assert all(step.startswith("curl ") for step in steps)
    assert failure.exchange.curl() in steps
    assert f"--only model-workspace --seed {seed}" in failure.extra["reproduce"]


def test_a_failure_is_shrunk_to_its_shortest_sequence():
    """The catalogue quotes less than the charge takes: one paid call shows it."""
    with live_mock(defects=["charge-differs-from-quote"]) as mock:
        report = run_quietly(mock_url=mock.base_url, only=ONLY, seed=1)
    (failure,) = model_result(report).failures
    assert failure.rule == "ledger" and failure.extra["shrunk"] is True
    steps = failure.extra["steps"]
    assert steps[0].endswith("/_mock/reset")  # each example starts from the reset mock
    assert "/v1/capabilities" in steps[1]  # the quote …
    assert len(steps) <= 4 and failure.exchange.method == "POST"  # … and the paid call
    assert "shrunk to a sequence of" in failure.message
    assert any("state." in line for line in failure.extra["program"])  # Hypothesis' program


def test_a_patch_of_a_record_from_before_the_example_is_shrunk_to_its_one_step():
    """A record that existed before the example is drawn first, so deleting a create made
    before the PATCH leaves the PATCH on the same record: the unsent field the deployment
    clears is shown by the PATCH alone (seed 7 found it after other steps)."""
    with live_mock(defects=["channel-patch-resets-unsent"]) as mock:
        report = run_quietly(mock_url=mock.base_url, only=ONLY, seed=7)
    (failure,) = model_result(report).failures
    assert failure.rule == "partial-update" and failure.extra["shrunk"] is True
    steps = failure.extra["steps"]
    assert steps[0].endswith("/_mock/reset")
    assert sum(" -X PATCH " in step for step in steps) == 1
    assert len(steps) <= 5, steps
