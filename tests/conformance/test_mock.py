"""Proven on the mock: ``conformance run --mock --allow-spend`` passes every check it can run
(operations the mock does not serve yet are skipped as capability unavailable, never passed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from conformance.checks.ratelimit import LOW_LIMIT
from conformance.skips import CAPABILITY_UNAVAILABLE
from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import Served, live_mock, run_quietly

ALWAYS_RUNNABLE = {
    "envelope-request-id", "envelope-json", "auth-missing-key", "auth-public-contract",
    "auth-workspace-slug", "pagination-walk", "pagination-cursors", "pagination-limit-bounds",
    "idempotency-key-required", "limits-payload-too-large", "schema-responses",
    "schema-positive", "schema-negative",
}  # fmt: skip


def test_run_mock_allow_spend_passes_end_to_end(tmp_path: Path):
    out = tmp_path / "report.json"
    command = [sys.executable, "-m", "conformance", "run", "--mock", "--allow-spend",
               "--max-requests", "3000", "--seed", "1", "--report-json", str(out)]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=170)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    report = json.loads(out.read_text())
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    # The rate-limit probes run in every run: in sandboxes of their own at a low limit.
    assert statuses["rate-limit"] == statuses["rate-limit-shared-bucket"] == "passed"
    assert all(s in ("passed", "skipped") for s in statuses.values())
    assert {n for n, s in statuses.items() if s == "passed"} >= ALWAYS_RUNNABLE
    assert report["requests"] <= 3000 and report["seed"] == 1 and report["profile"] == "full"
    for check in report["checks"]:
        if check["status"] == "skipped":
            assert check["skipped"], f"{check['name']} skipped without a reason"
    assert "PASSED" in result.stdout and "--seed 1" in result.stdout


def test_capability_unavailable_is_a_skip_never_a_pass():
    # The fake answers 503 capability_unavailable for everything but a handful of operations.
    with Served(FakeDeployment()) as server:
        report = run_quietly(
            base_url=server.base_url,
            api_key=KEY,
            allow_spend=True,
            only=["schema-positive", "pagination-walk", "pagination-limit-bounds"],
            max_requests=300,
        )
    positive = report.result("schema-positive")
    assert positive.skipped[CAPABILITY_UNAVAILABLE] >= 40
    assert 0 < positive.passed < 12  # only the few operations the fake serves
    assert report.result("pagination-walk").status == "skipped"
    assert report.result("pagination-limit-bounds").status == "skipped"
    assert report.exit_code == 0


def test_the_rate_limit_probe_drives_the_mock_to_429_cheaply_and_waits_on_its_clock():
    with live_mock() as mock:
        report = run_quietly(mock_url=mock.base_url, sandbox=False, only=["rate-limit"])
        base = httpx.get(mock.base_url + "/_mock/rate-limits").json()
        sandboxes = httpx.get(mock.base_url + "/_mock/sandboxes").json()["sandboxes"]
    result = report.result("rate-limit")
    assert result.status == "passed", [f.message for f in report.failures]
    assert result.requests == LOW_LIMIT + 2  # the window, the 429, one after Retry-After
    assert not [n for n in report.notes if n.startswith("waited")]  # the clock was moved
    # In a sandbox of its own, ended afterwards: the world the run works in keeps its limit
    # and has spent nothing of it.
    assert base["limit"] == 100 and base["buckets"] == [] and sandboxes == []


def test_a_check_that_judges_nothing_is_skipped_and_so_is_the_run():
    """envelope-timestamps only observes other checks' exchanges; alone it sees none."""
    with live_mock() as mock:
        report = run_quietly(
            base_url=mock.base_url, api_key="sk_test_acme_owner", only=["envelope-timestamps"]
        )
    result = report.result("envelope-timestamps")
    assert result.status == "skipped" and result.judgements == 0
    assert result.skip_summary() == "nothing to judge"
    assert report.verdict == "nothing judged" and report.exit_code == 3
    data = report.to_dict()
    assert data["verdict"] == "nothing judged" and data["summary"]["judgements"] == 0
