"""Failure reports show why: failed checks come first, failures of several checks on one
operation's one error status read as one root cause (terminal, JSON, HTML), and the contract's
Markdown is rendered in the HTML (``code``, not backticks; raw HTML escaped; no images)."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import main
from conformance.outcomes import CheckResult, Failure
from conformance.reports import html_page
from conformance.results import Report
from mockserver.settings import Settings
from tests.conformance.support import OWNER, Served
from tests.defects import create_app

#: Checks the broken operation makes fail (the auth checks call it, the observer sees its 5xx),
#: with two that pass.
ONLY = ["envelope-request-id", "auth-missing-key", "auth-unknown-key", "auth-public-contract",
        "schema-server-errors"]  # fmt: skip
BROKEN = ("GET", "/v1/capabilities")


class AnswersFiveHundred:
    """The bundled mock, but ``GET /v1/capabilities`` answers 500 (a standard error body)."""

    def __init__(self) -> None:
        settings = Settings(clock="manual", seed=7, allow_private_callbacks=True)
        self.mock = create_app(settings, ())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (scope["method"], scope["path"]) == BROKEN:
            body = json.dumps({"success": False, "error": "boom", "code": "internal_error"})
            await send(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"x-request-id", b"req_broken"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body.encode()})
            return
        await self.mock(scope, receive, send)


@pytest.fixture(scope="module")
def broken_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str, Path]]:
    out = tmp_path_factory.mktemp("reports")
    argv = ["run", "--no-progress", "--seed", "1", "--only", *ONLY,
            "--report-json", str(out / "r.json"), "--report-html", str(out / "r.html")]  # fmt: skip
    stdout = io.StringIO()
    with (
        Served(AnswersFiveHundred(), log_level="error", lifespan="off") as server,
        contextlib.redirect_stdout(stdout),
        pytest.raises(SystemExit) as exit_info,
    ):
        main([*argv, "--base-url", server.base_url, "--api-key", OWNER])
    yield int(exit_info.value.code or 0), stdout.getvalue(), out


def test_checks_failing_on_one_operation_and_status_are_one_root_cause(broken_run):
    status, out, paths = broken_run
    assert status == 1
    data = json.loads((paths / "r.json").read_text())
    failed = {c["name"] for c in data["checks"] if c["status"] == "failed"}
    assert {"auth-missing-key", "auth-unknown-key", "schema-server-errors"} <= failed
    [cause] = [c for c in data["rootCauses"] if c["status"] == 500]
    assert cause["operation"] == "getCapabilities" and cause["method"] == "GET"
    assert set(cause["checks"]) == failed
    headline = f"getCapabilities (GET /v1/capabilities) answered 500 in {len(failed)} checks: "
    assert cause["summary"].startswith(headline)

    # on the terminal, ahead of the failures of each rule
    lines = out.splitlines()
    root = next(i for i, line in enumerate(lines) if line.startswith("ROOT CAUSE "))
    assert lines[root].removeprefix("ROOT CAUSE ").startswith(headline)
    assert root < next(i for i, line in enumerate(lines) if line.startswith("FAIL "))

    # in the HTML, at the head of the failures, each check linked to its failures
    page = (paths / "r.html").read_text()
    section = page[page.index("id=root-causes") : page.index("</ul>", page.index("id=root-causes"))]
    assert "answered <b>500</b>" in section
    for name in failed:
        assert f"href='#failures-{name}'" in section
    assert page.index("id=root-causes") < page.index("<section class=check")


def test_one_check_failing_is_no_root_cause():
    alone = Failure("auth-missing-key", "status", "expected 401")
    report = Report("https://x.example", "contract", 1, False, False)
    report.checks = [CheckResult("auth-missing-key", "auth", "", failures=[alone])]
    assert report.to_dict()["rootCauses"] == []


def test_failed_checks_come_first(broken_run):
    _, out, paths = broken_run
    data = json.loads((paths / "r.json").read_text())
    statuses = {c["name"]: c["status"] for c in data["checks"]}
    failed = [name for name in ONLY if statuses[name] == "failed"]
    assert statuses["envelope-request-id"] == "passed"  # first in the run's order

    # the terminal's summary table
    table = out[out.index("Conformance of ") :].splitlines()
    rows = [line.split()[0] for line in table if line.split()[:1] in ([n] for n in ONLY)]
    assert rows[: len(failed)] == failed and len(rows) == len(ONLY)

    # the HTML's per-check table
    page = (paths / "r.html").read_text()
    table = page[page.index("<table id=checks>") :]
    order = re.findall(r"<tr id='check-([\w-]+)'>", table)
    assert order[: len(failed)] == failed and set(order) == set(ONLY)


def test_the_contracts_markdown_is_rendered_in_the_html(broken_run):
    _, _, paths = broken_run
    page = (paths / "r.html").read_text()
    quotes = re.findall(r"<blockquote>(.*?)</blockquote>", page, re.S)
    assert quotes and any("<code>" in q for q in quotes)
    assert not [q for q in quotes if "`" in q]


def test_markdown_in_a_quote_escapes_raw_html_and_loads_no_image():
    quote = "Answer `401` **now**; <script>alert(1)</script> ![x](https://img.example/x.png)"
    failure = Failure("auth-missing-key", "status", "expected 401", quote=quote)
    report = Report("https://x.example", "contract", 1, False, False)
    report.checks = [CheckResult("auth-missing-key", "auth", "", failures=[failure])]
    page = html_page(report)
    assert "<code>401</code>" in page and "<strong>now</strong>" in page
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<img" not in page
