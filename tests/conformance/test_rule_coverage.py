"""Rule coverage is the headline: every format (terminal, JSON, JUnit, HTML) says how many of the
judgeable rules a run judged, and lists the others with why; the CI gates (--min-rule-coverage,
--require) turn missing coverage into exit 4, which a broken rule (1) and a setup problem (2)
still win over."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.checks import select
from conformance.cli import main
from conformance.coverage import rule_coverage
from conformance.outcomes import CheckResult
from conformance.results import (
    EXIT_INSUFFICIENT_COVERAGE,
    EXIT_SETUP_PROBLEM,
    INSUFFICIENT_COVERAGE,
    Report,
)
from conformance.rules import rules
from conformance.skips import NEEDS_CREATE
from tests.conformance.support import OWNER, Served, live_mock, run_quietly

#: Two checks that judge a read-only run, two that need --allow-spend.
ONLY = ["envelope-request-id", "auth-public-contract", "idempotency-replay", "records-defaults"]
SPENDING = {"idempotency-replay", "records-defaults"}


@pytest.fixture(scope="module")
def mock() -> Iterator[Served]:
    # Reached with --base-url, its manual clock never moves the rate window: a limit no run
    # here reaches, or the preflight rightly calls a run that needs the window a setup problem.
    with live_mock(rate_limit=1_000_000) as served:
        yield served


def conformance(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """Exit status and standard output (whitespace folded) of ``conformance run ...``."""
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--no-progress", "--seed", "1", *argv])
    out = capsys.readouterr().out
    return int(exit_info.value.code or 0), " ".join(out.split())


def test_every_format_states_the_same_rule_coverage(
    mock: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    paths = {n: tmp_path / n for n in ("r.json", "r.xml", "r.html")}
    status, out = conformance(
        ["--base-url", mock.base_url, "--api-key", OWNER, "--only", ",".join(ONLY),
         "--report-json", str(paths["r.json"]), "--junit-xml", str(paths["r.xml"]),
         "--report-html", str(paths["r.html"])],
        capsys,
    )  # fmt: skip
    assert status == 0
    found = json.loads(paths["r.json"].read_text())["rules"]
    table = rules()
    judgeable = [r for r in table if r.checks]  # a deployment: mock-only rules are not
    assert (found["stated"], found["judgeable"]) == (len(table), len(judgeable))
    assert found["judged"] + len(found["notJudged"]) == found["judgeable"]
    assert 0 < found["judged"] < found["judgeable"]
    assert found["percent"] == round(100 * found["judged"] / found["judgeable"], 1)
    families = found["families"].values()
    assert sum(f["judgeable"] for f in families) == found["judgeable"]
    assert sum(f["judged"] for f in families) == found["judged"]

    # the terminal's verdict line
    headline = f"{found['judged']} of {found['judgeable']} judgeable rules judged"
    assert (
        f"PASSED: {headline} ({found['percent']:g}%); {len(found['notJudged'])} not judged" in out
    )

    # JUnit: properties and the suite's own output
    suite = ET.parse(paths["r.xml"]).getroot().find("testsuite")
    assert suite is not None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["rulesStated"] == str(found["stated"])
    assert properties["rulesJudgeable"] == str(found["judgeable"])
    assert properties["rulesJudged"] == str(found["judged"])
    assert properties["rulesPercent"] == str(found["percent"])
    for category, count in found["notJudgedByCategory"].items():
        assert properties[f"rulesNotJudged.{category}"] == str(count)
    suite_out = suite.find("system-out")
    assert suite_out is not None and headline in (suite_out.text or "")
    assert (suite_out.text or "").count("\n  - (") == len(found["notJudged"])

    # HTML: the headline's figures, a bar per family, every rule not judged
    page = paths["r.html"].read_text()
    figures = dict(re.findall(r"data-rules-(\w+)=([\d.]+)", page))
    assert figures == {
        "judged": str(found["judged"]),
        "judgeable": str(found["judgeable"]),
        "stated": str(found["stated"]),
        "percent": str(found["percent"]),
    }
    assert page.index("id=coverage") < page.index("id=checks")
    assert set(re.findall(r"data-family='([\w-]+)'", page)) == set(found["families"])
    assert len(re.findall(r"<tr data-category=", page)) == len(found["notJudged"])


def test_a_read_only_run_lists_what_needs_allow_spend_and_what_was_not_selected(
    mock: Served, capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    path = tmp_path / "r.json"
    status, out = conformance(
        ["--base-url", mock.base_url, "--api-key", OWNER, "--only", *ONLY,
         "--report-json", str(path)],
        capsys,
    )  # fmt: skip
    assert status == 0
    found = json.loads(path.read_text())["rules"]
    not_judged = found["notJudged"]
    selected = set(ONLY)
    spend = [n for n in not_judged if n["category"] == "needs-allow-spend"]
    assert spend and {n["check"] for n in spend} == SPENDING
    assert all(NEEDS_CREATE in n["reason"] for n in spend)
    # every rule none of whose checks ran is "not selected", and only those
    unselected = [r for r in rules() if r.checks and not selected & set(r.checks)]
    left_out = [n for n in not_judged if n["category"] == "not-selected"]
    assert len(left_out) == len(unselected)
    assert all("not selected" in n["reason"] and not selected & set(n["checks"]) for n in left_out)
    for entry in not_judged:
        assert set(entry) == {"rule", "section", "checks", "check", "reason", "category"}
    # the terminal names the checks of each reason, with how many rules each
    assert f"{len(spend)} need --allow-spend: " in out
    assert "idempotency-replay (" in out and "records-defaults (" in out

    # with --allow-spend those rules are judged
    spent = rule_coverage(
        run_quietly(base_url=mock.base_url, api_key=OWNER, only=ONLY, allow_spend=True)
    )
    assert spent.judged > found["judged"]
    assert not [n for n in spent.not_judged if n.category == "needs-allow-spend"]


def test_rules_waiting_for_an_option_or_the_mock_say_which(
    mock: Served, capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    path = tmp_path / "r.json"
    only = "auth-public-contract,auth-cross-workspace,auth-credential-store-outage"
    argv = ["--base-url", mock.base_url, "--api-key", OWNER, "--only", only]
    status, out = conformance([*argv, "--report-json", str(path)], capsys)
    assert status == 0
    found = json.loads(path.read_text())["rules"]["notJudged"]
    by_check = {n["check"]: (n["category"], n["reason"]) for n in found}
    assert by_check["auth-cross-workspace"] == (
        "needs-option",
        "auth-cross-workspace: needs --second-key",
    )
    category, reason = by_check["auth-credential-store-outage"]
    assert category == "needs-mock" and "control plane" in reason
    assert "need an option (--second-key): auth-cross-workspace (" in out
    assert "need the bundled mock (its control plane or fixtures): auth-credential-store" in out


def test_only_narrows_what_is_judged(mock: Served):
    def coverage(only: list[str]) -> Any:
        return rule_coverage(run_quietly(base_url=mock.base_url, api_key=OWNER, only=only))

    one, more = coverage(["auth-public-contract"]), coverage(["auth-public-contract", "envelope"])
    assert 0 < one.judged < more.judged
    assert one.judgeable == more.judgeable  # what the target makes judgeable: unchanged
    selected = {c.name for c in select(["auth-public-contract", "envelope"])}
    judged_by_them = [r for r in rules() if set(r.checks) & selected]
    assert more.judged <= len(judged_by_them)
    unselected = [n for n in more.not_judged if n.category == "not-selected"]
    assert len(unselected) == more.judgeable - len(judged_by_them)


def test_against_the_mock_its_control_plane_makes_more_rules_judgeable(mock: Served):
    report = run_quietly(mock_url=mock.base_url, only=["auth-key-revocation"])
    coverage = rule_coverage(report)
    table = rules()
    assert coverage.judgeable == sum(1 for r in table if r.checks or r.mock_checks)
    assert coverage.judged == sum(1 for r in table if "auth-key-revocation" in r.judged_by)


def test_workers_give_the_same_coverage_as_one_process(mock: Served):
    only = ["envelope", "auth-public-contract", "idempotency-replay", "webhooks-url-policy"]
    one = run_quietly(mock_url=mock.base_url, only=only, seed=2, min_rule_coverage=50)
    two = run_quietly(mock_url=mock.base_url, only=only, seed=2, min_rule_coverage=50, workers=2)
    assert rule_coverage(two).to_dict() == rule_coverage(one).to_dict()
    assert rule_coverage(one).judged > 0
    assert two.to_dict()["gates"] == one.to_dict()["gates"]
    assert two.verdict == one.verdict == INSUFFICIENT_COVERAGE


# -- CI gates -------------------------------------------------------------------------------------


def test_an_unmet_coverage_gate_exits_4_and_says_by_how_much(
    mock: Served, capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    path, junit = tmp_path / "r.json", tmp_path / "r.xml"
    argv = ["--base-url", mock.base_url, "--api-key", OWNER, "--only", *ONLY]
    status, out = conformance(
        [*argv, "--min-rule-coverage", "90", "--report-json", str(path), "--junit-xml", str(junit)],
        capsys,
    )
    assert status == EXIT_INSUFFICIENT_COVERAGE == 4
    data = json.loads(path.read_text())
    assert (data["verdict"], data["exitCode"]) == (INSUFFICIENT_COVERAGE, 4)
    [gate] = data["gates"]
    judged, judgeable = data["rules"]["judged"], data["rules"]["judgeable"]
    short = -(-90 * judgeable // 100) - judged
    assert gate["gate"] == "--min-rule-coverage 90" and gate["met"] is False
    assert f"{short} more rule(s) to judge" in gate["detail"]
    assert f"gate NOT met --min-rule-coverage 90: {gate['detail']}" in out
    assert out.count("INSUFFICIENT COVERAGE: ") == 1
    # JUnit: a suite of the gates beside the checks', the unmet one failing
    suites = {s.get("name"): s for s in ET.parse(junit).getroot().iter("testsuite")}
    assert suites["conformance-gates"].get("failures") == "1"
    failure = suites["conformance-gates"].find("testcase/failure")
    assert failure is not None and failure.get("message") == gate["detail"]
    assert suites["conformance"].get("failures") == "0"

    # met, the same run passes
    judged_percent = 100 * judged / judgeable
    status, out = conformance([*argv, "--min-rule-coverage", f"{judged_percent:.2f}"], capsys)
    assert status == 0 and "gate met --min-rule-coverage" in out


def test_a_required_check_or_family_must_judge(
    mock: Served, capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    argv = ["--base-url", mock.base_url, "--api-key", OWNER]
    status, out = conformance([*argv, "--only", *ONLY, "--require", "idempotency-replay"], capsys)
    assert status == 4
    assert "gate NOT met --require idempotency-replay" in out and "needs --allow-spend" in out
    assert conformance([*argv, "--only", *ONLY, "--require", "envelope-request-id"], capsys)[0] == 0

    # a family: every check of it this target can run. Against a deployment the checks that need
    # the bundled mock (pagination-legacy-projects-cursor) are left out of it.
    path = tmp_path / "r.json"
    status, out = conformance(
        [*argv, "--only", "pagination", "--require", "pagination", "--report-json", str(path)],
        capsys,
    )
    assert status == 0, out
    data = json.loads(path.read_text())
    skipped = {c["name"] for c in data["checks"] if c["status"] == "skipped"}
    assert skipped == {"pagination-legacy-projects-cursor"}
    [gate] = data["gates"]
    assert gate["met"] and gate["detail"] == f"all {len(select(['pagination'])) - 1} checks judged"


def test_a_broken_rule_wins_over_an_unmet_gate(capsys: pytest.CaptureFixture[str]):
    with live_mock(defects=["no-request-id-on-errors"]) as broken:
        status, out = conformance(
            ["--base-url", broken.base_url, "--api-key", OWNER, "--only", "envelope",
             "--min-rule-coverage", "100", "--require", "envelope-retry-after-503"],
            capsys,
        )  # fmt: skip
    assert status == 1
    assert "FAILED: " in out and "INSUFFICIENT COVERAGE" not in out
    assert "gate NOT met --min-rule-coverage 100" in out  # still said


def test_a_setup_problem_wins_over_an_unmet_gate():
    judged = CheckResult("envelope-request-id", "envelope", "", passed=3)
    report = Report("https://x.example", "contract", 1, False, False, checks=[judged])
    report.min_rule_coverage = 100
    assert report.exit_code == EXIT_INSUFFICIENT_COVERAGE
    report.setup_problem = "give a key that authenticates"
    assert report.exit_code == EXIT_SETUP_PROBLEM


@pytest.mark.parametrize(
    "gate",
    [
        ["--require", "no-such-check"],
        ["--min-rule-coverage", "101"],
        ["--min-rule-coverage", "-1"],
        ["--only", "envelope", "--require", "auth"],  # left out by --only
    ],
)
def test_gates_are_validated_like_only(gate: list[str], capsys: pytest.CaptureFixture[str]):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--base-url", "http://127.0.0.1:9", "--api-key", "k", *gate])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith("conformance: error: --")
