"""Reports of a run that fails almost everywhere stay readable: a full-profile run against a
stateless deployment (every GET answers ``200 {"success": true}``, everything else ``422`` with a
body that is not the standard error body, no request ids, no rate-limit headers, no
authentication) fails thousands of times, and still

* the HTML report is one page under 1 MB, with the totals at the top, each failed check linked
  to its failures, the first few failures of each rule in full and the rest counted;
* JUnit, JSON, HTML and the terminal state the same totals;
* no message says Python's ``None`` (the bodies have no ``code``).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from conformance.console import print_report, summary_table
from conformance.contract import bundled_document
from conformance.results import SHOWN_PER_RULE, Report, group_failures, totals
from tests.conformance.support import Served, run_quietly

ONE_MB = 1_000_000
SEED = 5


def stateless_deployment() -> Starlette:
    document = bundled_document()

    async def openapi(request: Request) -> JSONResponse:
        return JSONResponse(document)

    async def anything(request: Request) -> JSONResponse:
        if request.method == "GET":
            return JSONResponse({"success": True})
        return JSONResponse({"detail": "not processed"}, status_code=422)

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return Starlette(
        routes=[
            Route("/v1/openapi.json", openapi),
            Route("/{path:path}", anything, methods=methods),
        ]
    )


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Report, dict[str, Path]]:
    out = tmp_path_factory.mktemp("reports")
    paths = {"html": out / "r.html", "json": out / "r.json", "junit": out / "r.xml"}
    with Served(stateless_deployment(), log_level="error", lifespan="off") as server:
        report = run_quietly(
            base_url=server.base_url,
            api_key="sk_stateless_key",
            profile="full",
            allow_spend=True,
            webhook_wait=0.2,
            job_wait=0.2,
            seed=SEED,
            report_html=paths["html"],
            report_json=paths["json"],
            junit_xml=paths["junit"],
        )
    return report, paths


class _Totals(HTMLParser):
    """The ``data-total`` values of the HTML report's totals, and the one-line failure summaries."""

    def __init__(self) -> None:
        super().__init__()
        self.totals: dict[str, str] = {}
        self.summaries: list[str] = []
        self._summary: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("data-total"):
            self.totals[str(found["data-total"])] = str(found.get("data-value"))
        if tag == "summary":
            self._summary = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "summary" and self._summary is not None:
            self.summaries.append("".join(self._summary))
            self._summary = None

    def handle_data(self, data: str) -> None:
        if self._summary is not None:
            self._summary.append(data)


def _html(path: Path) -> _Totals:
    parser = _Totals()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def test_the_html_report_of_a_failing_run_stays_small_and_states_the_totals(failing_run):
    report, paths = failing_run
    total = totals(report)
    assert report.verdict == "failed" and total.judgements_failed > 1000
    assert len(report.failures) > 300  # distinct failures, each with its exchange
    size = paths["html"].stat().st_size
    assert size < ONE_MB, f"the HTML report is {size} bytes"

    page = paths["html"].read_text(encoding="utf-8")
    parsed = _html(paths["html"])
    for key in ("checksPassed", "checksFailed", "checksSkipped", "requests", "judgements", "seed"):
        assert parsed.totals[key] == str(total.to_dict()[key]), key
    assert parsed.totals["profile"] == "full" and parsed.totals["verdict"] == "failed"
    assert parsed.totals["durationSeconds"] == str(total.duration_seconds)
    assert total.duration_seconds > 0

    # every failed check links to its failures
    for name in report.failed_checks():
        assert f"href='#failures-{name}'" in page and f"id='failures-{name}'" in page
    # the first few failures of each rule in full; the rest counted
    groups = group_failures(report.failures)
    assert page.count("<details") == sum(len(g.shown) for g in groups)
    crowded = [g for g in groups if g.more]
    assert crowded
    for group in crowded:
        assert f"… and {group.more} more like this" in page
    assert all(len(g.shown) <= SHOWN_PER_RULE for g in groups)
    # pretty JSON bodies, cut with a note
    assert '{\n  "success": true\n}' in page.replace("&quot;", '"')
    assert re.search(r"… \d+ more bytes", page)  # the contract document answered by openapi
    assert "conformance run --base-url" in page and f"--seed {SEED}" in page
    assert "sk_stateless_key" not in page


def test_every_format_states_the_same_totals(failing_run):
    report, paths = failing_run
    total = totals(report)

    suite = ET.parse(paths["junit"]).getroot().find("testsuite")
    assert suite is not None
    junit = {
        "checks": int(suite.get("tests", "")),
        "checksFailed": int(suite.get("failures", "")),
        "checksSkipped": int(suite.get("skipped", "")),
        "durationSeconds": float(suite.get("time", "")),
    }
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    summary = json.loads(paths["json"].read_text(encoding="utf-8"))["summary"]
    html = _html(paths["html"]).totals

    expected = total.to_dict()
    assert summary == expected
    assert junit == {k: expected[k] for k in junit}
    assert {k: properties[k] for k in expected} == {k: str(v) for k, v in expected.items()}
    assert {k: html[k] for k in html} == {k: str(expected[k]) for k in html}
    assert set(html) == set(expected) - {"checks"}
    assert expected["checks"] == (
        expected["checksPassed"] + expected["checksFailed"] + expected["checksSkipped"]
    )
    assert expected["judgements"] == expected["judgementsPassed"] + expected["judgementsFailed"]

    console = Console(width=80, record=True, color_system=None)
    print_report(console, report)
    text = console.export_text()
    last = " ".join(text.split("\n")[-4:])
    for phrase in (
        f"checks {total.checks_passed} passed, {total.checks_failed} failed, "
        f"{total.checks_skipped} skipped",
        f"{total.requests} requests made",
        f"{total.judgements} judgements ({total.judgements_passed} passed, "
        f"{total.judgements_failed} failed)",
        f"{total.duration_seconds:.1f} s",
        f"seed {total.seed}",
    ):
        assert phrase in " ".join(last.split()), phrase


def test_no_message_says_none(failing_run):
    report, paths = failing_run
    codeless = [f for f in report.failures if f.exchange is not None and f.exchange.code is None]
    assert codeless  # the run did judge answers without a code
    none = re.compile(r"\bNone\b")
    messages: list[Any] = [f.message for f in report.failures]
    messages += [w.message for w in report.warnings]
    messages += [c.skip_summary() for c in report.checks]
    assert not [m for m in messages if none.search(m)]
    assert any("(no code)" in m for m in messages)
    assert not [s for s in _html(paths["html"]).summaries if none.search(s)]

    console = Console(width=80, record=True, color_system=None)
    print_report(console, report)
    headlines = [line for line in console.export_text().splitlines() if line.startswith("FAIL ")]
    assert headlines and not [h for h in headlines if none.search(h)]


def test_the_summary_table_fits_80_columns(failing_run):
    report, _ = failing_run
    console = Console(width=80, record=True, color_system=None)
    table, reasons = summary_table(report)
    console.print(table)
    lines = console.export_text().splitlines()
    assert max(len(line) for line in lines) <= 80
    for result in report.checks:
        assert any(re.search(rf"(^|\s){re.escape(result.name)}\s", line) for line in lines), (
            f"{result.name} is split or cut"
        )
    assert reasons and all(r for r in reasons)


def test_negative_data_failures_say_what_was_wrong(failing_run):
    report, _ = failing_run
    result = report.result("schema-negative")
    assert result is not None and result.failures
    for failure in result.failures:
        assert "expected 400 invalid_request" in failure.message
        assert failure.message.endswith("(status wrong)")
        assert re.search(r"got \d{3} with no code \(status wrong\)$", failure.message)
