"""``conformance run --mock-url`` against a mock whose control plane needs a token (what a mock
off loopback has by default, issue 24 part 2): ``--mock-control-token`` or
``$MOCKSERVER_CONTROL_TOKEN`` opens it, in a sandbox of the run's own and in the base world."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli import main
from conformance.results import Report
from tests.conformance.support import live_mock, run_quietly

TOKEN = "a-conformance-control-token"
ONLY = ["auth-public-contract", "pagination-limit-bounds"]


def judged(report: Report) -> bool:
    return report.setup_problem is None and report.exit_code == 0


@pytest.mark.parametrize(("sandbox", "workers"), [(True, 1), (False, 1), (True, 2)])
def test_the_run_reaches_a_closed_control_plane_with_its_token(sandbox: bool, workers: int):
    with live_mock(control_token=TOKEN) as mock:
        options = {"mock_url": mock.base_url, "sandbox": sandbox, "only": ONLY, "workers": workers}
        refused = run_quietly(**options, max_requests=200)
        assert refused.setup_problem and "401" in refused.setup_problem, refused.setup_problem
        assert TOKEN not in refused.setup_problem
        opened = run_quietly(**options, mock_control_token=TOKEN, max_requests=200)
        assert judged(opened), opened.setup_problem


def test_the_command_line_takes_it_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("MOCKSERVER_CONTROL_TOKEN", TOKEN)
    with live_mock(control_token=TOKEN) as mock, pytest.raises(SystemExit) as ended:
        main(["run", "--mock-url", mock.base_url, "--only", *ONLY, "--max-requests", "200",
              "--no-progress", "--report-json", str(tmp_path / "r.json")])  # fmt: skip
    assert ended.value.code == 0
