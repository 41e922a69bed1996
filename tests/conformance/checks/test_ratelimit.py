"""The rate-limit probes (conformance/checks/ratelimit.py): ``rate-limit`` (request N+1 of a
window is a 429 rate_limited with Retry-After and the rate-limit headers) and
``rate-limit-shared-bucket`` (one person's keys share one bucket, and a 429 earned with one key
pauses the other during its Retry-After).

Against the bundled mock they run in every run, in sandboxes of their own at a low limit; against
the mock reached as a deployment (``--base-url``, its clock moved by the run's ``sleep``) they
spend a whole window of the stated 100, and the shared-bucket probe needs ``--same-person-key``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.api import RunConfig, run
from conformance.checks.ratelimit import LOW_LIMIT, NEEDS_SAME_PERSON
from conformance.coverage import rule_coverage
from conformance.outcomes import CheckResult
from conformance.results import Report
from tests.conformance.support import OWNER, Served, live_mock, run_quietly
from tests.conformance.test_budget import Clock

OWNER_2 = "sk_test_acme_owner_2"  # alice's second key: her rate-limit bucket
EDITOR = "sk_test_acme_editor"  # erin: another person
PROBES = ["rate-limit", "rate-limit-shared-bucket"]
#: The interface document's rows these probes judge (conformance/rules.yaml).
ROWS = (
    "| Request rate |", "| `Retry-After` |", "| 429 |",
    "The 429 body is the standard error body",
)  # fmt: skip


@pytest.fixture(scope="module")
def mock() -> Iterator[Served]:
    with live_mock() as served:
        yield served


def _result(report: Report, name: str) -> CheckResult:
    result = report.result(name)
    assert result is not None, [c.name for c in report.checks]
    return result


def _rules_failed(report: Report, name: str) -> set[str]:
    return {f.rule for f in _result(report, name).failures}


# -- against the bundled mock: a low limit in a sandbox of their own -----------------------------


def test_a_default_run_against_the_mock_judges_both_probes_cheaply(mock: Served):
    report = run_quietly(mock_url=mock.base_url, skip=["schema", "model", "webhooks"])
    for name in PROBES:
        result = _result(report, name)
        assert result.status == "passed" and result.judgements, (name, result.skipped)
    # the window of the low limit, the 429, (the other key's 429,) one after Retry-After
    assert _result(report, "rate-limit").requests == LOW_LIMIT + 2
    assert _result(report, "rate-limit-shared-bucket").requests == LOW_LIMIT + 3
    assert _result(report, "rate-limit-retry-after").passed >= 4  # both probes' 429s, judged
    not_judged = [n.rule.text for n in rule_coverage(report).not_judged]
    for row in ROWS:
        assert not [text for text in not_judged if text.startswith(row)], row


@pytest.mark.parametrize(
    ("defect", "check", "rules"),
    [
        ("bucket-per-key", "rate-limit-shared-bucket", {"shared-bucket"}),
        ("other-key-not-paused", "rate-limit-shared-bucket", {"paused"}),
        ("rate-limited-without-retry-after", "rate-limit", {"retry-after"}),
    ],
)
def test_each_probe_names_the_rule_its_defect_breaks(defect: str, check: str, rules: set[str]):
    with live_mock(defects=[defect]) as broken:
        report = run_quietly(mock_url=broken.base_url, only=PROBES)
    assert report.exit_code == 1
    assert _rules_failed(report, check) == rules, [f.message for f in report.failures]


# -- against a deployment: about one window each --------------------------------------------------


def _deployment(tmp_path: Path, **options: Any) -> tuple[Report, Clock]:
    clock = Clock()
    with live_mock() as served:  # the stated 100 a minute, on a clock only the run's sleep moves
        clock.mock_url = served.base_url
        report = run(
            RunConfig(
                base_url=served.base_url,
                api_key=OWNER,
                seed=1,
                clock=clock,
                sleep=clock.sleep,
                report_json=tmp_path / "report.json",
                **options,
            )
        )
    return report, clock


def test_without_a_same_person_key_the_shared_bucket_is_not_judged_and_says_why(tmp_path: Path):
    report, _ = _deployment(tmp_path, only=PROBES)
    assert _result(report, "rate-limit").status == "passed"
    assert _result(report, "rate-limit-shared-bucket").skipped == {NEEDS_SAME_PERSON: 1}
    why = [n for n in rule_coverage(report).not_judged if n.rule.text.startswith(ROWS[0])]
    assert why and why[0].category == "needs-option" and "--same-person-key" in why[0].reason


def test_with_a_same_person_key_one_window_judges_the_shared_bucket_and_the_pause(
    tmp_path: Path,
):
    report, clock = _deployment(tmp_path, same_person_key=OWNER_2, only=PROBES)
    assert report.exit_code == 0, [f.message for f in report.failures] or report.setup_problem
    shared = _result(report, "rate-limit-shared-bucket")
    assert shared.status == "passed" and shared.passed >= 4
    assert 100 <= shared.requests <= 104  # about one window of the stated 100
    assert sum(1 for s in clock.slept if s >= 55) == 2  # each probe waited one Retry-After
    assert '--same-person-key "$SAME_PERSON_API_KEY"' in " ".join(report.options)


def test_a_key_of_another_person_given_as_the_same_persons_fails_the_rule(tmp_path: Path):
    report, _ = _deployment(tmp_path, same_person_key=EDITOR, only=["rate-limit-shared-bucket"])
    assert report.exit_code == 1
    assert _rules_failed(report, "rate-limit-shared-bucket") == {"shared-bucket"}
    said = " ".join(report.notes)
    assert "--same-person-key does not seem to count in the rate-limit bucket" in said
    text = (tmp_path / "report.json").read_text()  # the failure's exchanges, keys masked
    assert EDITOR not in text and OWNER not in text
    assert "Bearer ${SAME_PERSON_API_KEY}" in text


def test_the_plan_of_a_bounded_deployment_run_states_the_probes_cost(tmp_path: Path):
    report, _ = _deployment(
        tmp_path,
        same_person_key=OWNER_2,
        time_budget=600,
        only=["rate-limit", "rate-limit-shared-bucket", "envelope"],
    )
    plan = next(n for n in report.notes if n.startswith("planned "))
    assert (
        "the rate-limit probes rate-limit and rate-limit-shared-bucket cost each about one "
        "rate-limit window: 103 requests and up to 60 s of waiting for Retry-After" in plan
    )
    assert {_result(report, n).status for n in PROBES} == {"passed"}


def test_a_budget_smaller_than_a_window_skips_the_probes_saying_so(tmp_path: Path):
    report, clock = _deployment(tmp_path, max_requests=60, only=["rate-limit", "envelope"])
    assert _result(report, "rate-limit").skipped == {"request budget used up": 1}
    assert clock.slept == []  # no window was waited for
