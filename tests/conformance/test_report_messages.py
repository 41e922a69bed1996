"""What people read, without a run: failures with no code never say ``None``; a negative-data
failure says whether the status, the code or the body was wrong; bodies are pretty-printed and
cut; warnings and failures of one kind are folded with a count; the terminal's summary table fits
80 columns; every report is well formed whatever bytes the exchange carried."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from rich.console import Console

from conformance.checks.schema import _refusal_diff, _refusal_problem
from conformance.console import print_report, summary_table
from conformance.htmlreport import cut, pretty_body
from conformance.outcomes import CheckResult, Failure, Warning_
from conformance.reports import failure_text, html_page, write_junit
from conformance.results import Report, group_warnings, totals
from conformance.target import Exchange

NONE = re.compile(r"\bNone\b")
LONGEST = "webhooks-subscription-deliveries-and-more"  # longer than any check name today


def exchange(status: int, body: bytes, *, method: str = "POST") -> Exchange:
    return Exchange(
        index=1,
        method=method,
        url="http://127.0.0.1:9/v1/projects",
        request_headers={"authorization": "Bearer sk_secret", "content-type": "application/json"},
        request_body=b'{"name": "\x00x"}',
        status=status,
        response_headers={"content-type": "application/json"},
        response_body=body,
        elapsed=0.01,
        operation_id="createProject",
        masks={"sk_secret": "${API_KEY}"},
    )


def refusal(status: int, body: bytes, codes: tuple[str, ...] = ("invalid_request",)) -> str:
    answer = exchange(status, body)
    allowed = {400, 413}
    return _refusal_diff(answer, allowed, codes, _refusal_problem(answer, allowed, codes))


def test_a_negative_data_failure_says_which_part_was_wrong():
    assert refusal(422, b'{"success": false, "code": "unprocessable"}') == (
        "expected 400 invalid_request (or 413), got 422 unprocessable (status wrong)"
    )
    assert refusal(422, b'{"detail": "x"}') == (
        "expected 400 invalid_request (or 413), got 422 with no code (status wrong)"
    )
    assert refusal(400, b'{"success": false, "error": "x", "code": "not_found"}') == (
        "expected 400 invalid_request (or 413), got 400 not_found (code wrong)"
    )
    assert refusal(400, b"Bad Request") == (
        "expected 400 invalid_request (or 413), got 400 with no code "
        "(body not the standard error body)"
    )
    assert refusal(400, b'{"success": false, "code": "invalid_request"}').endswith(
        "got 400 invalid_request"
    )
    assert _refusal_problem(exchange(413, b""), {400, 413}, ("invalid_request",)) is None


def _report(*results: CheckResult) -> Report:
    report = Report("http://127.0.0.1:9", "full", 7, allow_spend=False, mock=False)
    report.checks = list(results)
    report.requests = 12
    report.duration_seconds = 1.23456
    return report


def _codeless_run() -> Report:
    """Failures whose answers have no code (and one with no seed), as checks write them."""
    answer = exchange(422, b'{"detail": "not processed"}')
    result = CheckResult("auth-missing-key", "auth", "no key answers 401", requests=3, passed=1)
    result.failures = [
        Failure(
            "auth-missing-key",
            "unauthorized",
            f"expected 401 unauthorized, got {answer.status} {answer.code}",  # as a check may
            subject="createProject",
            exchange=answer,
            seed=None,
        )
    ]
    result.warnings = [Warning_("auth-missing-key", f"code {answer.code} is odd")]
    result.skipped = Counter({f"x-ratelimit-remaining is {None}": 2})
    return _report(result)


def test_failures_without_a_code_never_say_none(tmp_path: Path):
    report = _codeless_run()
    [failure] = report.failures
    assert failure.exchange is not None and failure.exchange.code is None
    assert not NONE.search(failure.message) and "(none)" in failure.message
    assert not NONE.search(failure_text(failure))
    assert not NONE.search(report.checks[0].skip_summary())
    assert not NONE.search(json.dumps(report.to_dict()["checks"][0]["skipped"]))

    console = Console(width=80, record=True, color_system=None)
    print_report(console, report)
    assert not NONE.search(console.export_text())

    page = html_page(report)
    shown = re.sub(r"<[^>]+>", " ", page)
    assert not NONE.search(shown)
    assert "sk_secret" not in page and "${API_KEY}" in page


def test_bodies_are_pretty_and_cut():
    assert pretty_body(b'{"a":1,"b":[true,null]}') == (
        '{\n  "a": 1,\n  "b": [\n    true,\n    null\n  ]\n}'
    )
    assert pretty_body(b"plain text") == "plain text"
    assert pretty_body(b"") == ""
    text = "é" * 3000  # 6000 bytes
    shown = cut(text, 2048)
    kept, note = shown.rsplit("\n", 1)
    assert kept == "é" * 1024 and note == "… 3952 more bytes"
    big = json.dumps({"items": list(range(2000))}).encode()
    assert pretty_body(big).endswith("more bytes") and len(pretty_body(big).encode()) < 2100


def test_warnings_of_one_kind_are_counted_once():
    result = CheckResult("envelope-error-code", "envelope", "codes")
    result.warnings = [
        Warning_("envelope-error-code", f"unknown code 'c{i}' under {400 + i % 2}", f"op{i}", i)
        for i in range(1, 7)
    ] + [Warning_("envelope-error-code", "status 418 is not in the table", "tea")]
    [kind, other] = group_warnings(result.warnings)
    assert kind.kind == "unknown code … under …" and kind.count == 21
    assert kind.example == "unknown code 'c1' under 401" and len(kind.variants()) == 3
    assert other.count == 1
    page = html_page(_report(result))
    assert "Warnings (22 in 2 kinds)" in page
    assert page.count("unknown code") == 4  # the kind and its first three variants


def test_the_summary_table_fits_80_columns_and_never_splits_a_name():
    results = []
    for i, name in enumerate([LONGEST, "envelope-request-id", "pagination-cursors", "auth-x"]):
        result = CheckResult(name, "f", "d", requests=123456, passed=98765 * (i + 1))
        result.skipped = Counter(
            {
                "the bundled mock runs with --allow-private-callbacks (for the loopback "
                "receiver), so the url policy cannot be judged": 6,
                f"reason {i}": 1,
            }
        )
        results.append(result)
    results[1].failures = [Failure("envelope-request-id", "x", "m", occurrences=54321)]
    console = Console(width=80, record=True, color_system=None)
    table, reasons = summary_table(_report(*results))
    console.print(table)
    lines = console.export_text().splitlines()
    assert max(map(len, lines)) <= 80
    for result in results:
        assert sum(result.name in line for line in lines) == 1, result.name
    assert len(reasons) == 4 and "[4]" in lines[-1]


def test_junit_is_well_formed_whatever_the_exchange_carried(tmp_path: Path):
    answer = exchange(200, b"\x00\x01\xfe\xff not json \x1b[31m")
    result = CheckResult("schema-responses", "schema", "d", requests=1)
    result.failures = [
        Failure("schema-responses", "body", "got \x00\x07 and \udcff", exchange=answer, seed=1)
    ]
    report = _report(result)
    write_junit(report, tmp_path / "junit.xml")
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    assert suite.get("time") == f"{totals(report).duration_seconds:.3f}" == "1.235"
    text = (tmp_path / "junit.xml").read_text(encoding="utf-8")
    assert "\\x00\\x07" in text and "sk_secret" not in text
    page = html_page(report)
    assert "\x00" not in page and "\\x00" in page


def test_a_shrunk_sequence_is_printed_step_by_step():
    steps = ["curl -i -X POST http://mock/_mock/reset", "curl -i http://mock/v1/capabilities"]
    failure = Failure(
        check="model-workspace",
        rule="ledger",
        message="the balance is 9990, the model says 10000",
        seed=4,
        extra={"steps": steps, "shrunk": True},
    )
    text = failure_text(failure)
    assert "shortest sequence, 2 step(s):" in text
    assert all(f"    {step}" in text for step in steps)
    report = Report(base_url="http://mock", profile="full", seed=4, allow_spend=True, mock=True)
    result = CheckResult("model-workspace", "model", "a model")
    result.failures.append(failure)
    report.checks.append(result)
    page = html_page(report)
    assert "The shortest sequence, 2 step(s)" in page and "/_mock/reset" in page


def test_the_rerun_command_aims_where_the_run_aimed_and_shows_no_key():
    from conformance.api import RunConfig, rerun_options
    from conformance.reports import rerun_command

    config = RunConfig(
        base_url="https://api.example.com",
        api_key="sk_live_secret",
        restricted_key="sk_live_editor",
        second_key="sk_live_other",
        allow_spend=True,
        allow_faults=True,
    )
    report = Report(
        base_url="https://api.example.com", profile="contract", seed=9, allow_spend=True,
        mock=False, options=rerun_options(config),
    )  # fmt: skip
    failure = Failure(check="auth-forbidden-role", rule="forbidden", message="404", seed=9)
    command = rerun_command(report, failure)
    assert command == (
        'conformance run --base-url https://api.example.com --api-key "$API_KEY" '
        '--second-key "$SECOND_API_KEY" --restricted-key "$RESTRICTED_API_KEY" --allow-spend '
        "--allow-faults --profile contract --only auth-forbidden-role --seed 9"
    )
    assert "sk_live" not in command
    mock_url = rerun_options(RunConfig(mock_url="http://127.0.0.1:8000", sandbox=False))
    assert mock_url == ["--mock-url", "http://127.0.0.1:8000", "--no-sandbox"]
