"""Reports: JUnit XML, JSON and HTML are written and well formed; failures carry what reproduces
them (the request, the response, a curl command with the key masked, the seed)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import Served, run_quietly

ONLY = ["envelope-json", "schema-responses", "auth-public-contract", "idempotency-replay"]


class _Tables(HTMLParser):
    """The text of every table cell (links and other markup inside a cell included)."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[str] = []
        self.tables = 0
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tables += tag == "table"
        if tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.cells.append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def test_reports_are_written_and_well_formed(tmp_path: Path):
    fake = FakeDeployment(capabilities_missing_inferred_fields=True)
    paths = {n: tmp_path / "out" / n for n in ("junit.xml", "report.json", "report.html")}
    with Served(fake) as server:
        report = run_quietly(
            base_url=server.base_url,
            api_key=KEY,
            profile="full",
            only=ONLY,
            seed=11,
            junit_xml=paths["junit.xml"],
            report_json=paths["report.json"],
            report_html=paths["report.html"],
        )
    assert not report.ok

    suite = ET.parse(paths["junit.xml"]).getroot().find("testsuite")
    assert suite is not None
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == set(ONLY)
    assert suite.get("tests") == "4" and suite.get("failures") == "1"
    failure = cases["schema-responses"].find("failure")
    assert failure is not None and "curl" in (failure.text or "")
    assert cases["idempotency-replay"].find("skipped") is not None
    assert cases["envelope-json"].find("failure") is None
    properties = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert properties["seed"] == "11"

    data = json.loads(paths["report.json"].read_text())
    assert data["ok"] is False and data["exitCode"] == 1 and data["seed"] == 11
    assert data["verdict"] == "failed"
    assert data["summary"]["requests"] == data["requests"]
    assert data["summary"]["judgements"] == sum(c["judgements"] for c in data["checks"])
    by_name = {c["name"]: c for c in data["checks"]}
    assert by_name["idempotency-replay"]["status"] == "skipped"
    assert by_name["idempotency-replay"]["skipped"] == {
        "creates or changes resources: needs --allow-spend": 1
    }
    [found] = by_name["schema-responses"]["failures"]
    assert found["exchange"]["request"]["headers"]["authorization"] == "Bearer ${API_KEY}"
    assert KEY not in json.dumps(data)
    assert "${API_KEY}" in found["exchange"]["curl"]
    assert found["exchange"]["response"]["status"] == 200 and found["seed"] == 11

    page = paths["report.html"].read_text()
    parser = _Tables()
    parser.feed(page)
    # the families' coverage, the checks, and a table of rules not judged for each reason
    categories = len(data["rules"]["notJudgedByCategory"])
    assert parser.tables == 2 + categories and "id=warnings" not in page  # no warnings here
    assert {"check", "verdict", "requests", "judgements passed", "judgements failed"} <= set(
        parser.cells
    )
    assert set(ONLY) <= set(parser.cells)
    assert "href='#failures-schema-responses'" in page and "id='failures-schema-responses'" in page
    assert "<details" in page and "curl -i" in page and KEY not in page
    # an observer's failure reruns the observer with the check whose request it judged
    assert "conformance run --base-url" in page
    assert "--only schema-responses envelope-json --seed 11" in page
