"""The preflight (conformance/preflight.py): before any judgement, a setup the run cannot judge
is a setup problem (exit 2, one line on stderr, every report saying so), never a conformance
failure and never a hang; a correct setup passes it and the run goes on."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.responses import JSONResponse

from conformance.api import RunConfig, run
from conformance.cli import main
from conformance.preflight import GAP_SECONDS, planned_requests, seconds_at_rate
from conformance.results import SETUP_PROBLEM
from conformance.target import STUCK_AFTER
from mockserver.resources import fixtures_dir
from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import GLOBEX, OWNER, Served, free_port, live_mock

EDITOR = "sk_test_acme_editor"
ADMIN = "sk_test_acme_admin"
OWNER_2 = "sk_test_acme_owner_2"  # alice's second key: her rate-limit bucket


@pytest.fixture(scope="module")
def mock() -> Iterator[Served]:
    with live_mock() as served:
        yield served


def outcome(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    out, err = capsys.readouterr()
    return int(exit_info.value.code or 0), out, err


def the_one_line(err: str) -> str:
    """stderr holds exactly one line, the setup problem; its text."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("conformance: setup problem: ")
    return lines[0]


def reports(tmp_path: Path) -> list[str]:
    return ["--junit-xml", str(tmp_path / "j.xml"), "--report-json", str(tmp_path / "r.json"),
            "--report-html", str(tmp_path / "r.html")]  # fmt: skip


def assert_reports_say_setup_problem(tmp_path: Path, line: str) -> None:
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["verdict"] == SETUP_PROBLEM and data["exitCode"] == 2
    assert data["setupProblem"] and data["setupProblem"] in line
    assert data["checks"] == [] and data["summary"]["checksFailed"] == 0
    suite = ET.parse(tmp_path / "j.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("failures") == "0"
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["preflight"]
    error = cases[0].find("error")
    assert error is not None and data["setupProblem"] in (error.get("message") or "")
    page = (tmp_path / "r.html").read_text()
    assert "SETUP PROBLEM" in page and "id=setup-problem" in page and "Failures (" not in page


def advancing(mock: Served) -> Callable[[float], None]:
    """The suite's sleep, moving the mock's manual clock instead: a window on real time."""

    def sleep(seconds: float) -> None:
        if seconds > 0:
            httpx.post(f"{mock.base_url}/_mock/clock/advance", json={"seconds": seconds})

    return sleep


# -- the rate window ---------------------------------------------------------------------------


def test_a_manual_clock_reached_with_base_url_is_a_setup_problem_within_3_minutes(
    mock: Served, tmp_path: Path
):
    """The issue's run: a mock on its manual clock through --base-url, --max-requests 2000. It
    retried in silence for 10 minutes and wrote nothing; now it stops before any check."""
    slept: list[float] = []
    report = run(
        RunConfig(
            base_url=mock.base_url,
            api_key=OWNER,
            max_requests=2000,
            seed=1,
            sleep=slept.append,
            junit_xml=tmp_path / "j.xml",
            report_json=tmp_path / "r.json",
            report_html=tmp_path / "r.html",
        )
    )
    assert report.exit_code == 2 and report.verdict == SETUP_PROBLEM
    assert report.setup_problem and "does not move" in report.setup_problem
    assert "--mock-url" in report.setup_problem
    assert report.requests <= 4 and not report.checks  # before any check
    assert sum(slept) + report.duration_seconds < 180
    assert 0 < sum(slept) <= GAP_SECONDS
    assert_reports_say_setup_problem(tmp_path, report.setup_problem)


@pytest.mark.parametrize("moving", [True, False])
def test_the_rate_limit_probe_needs_a_window_that_moves(moving: bool):
    """A window on (simulated) real time: the preflight passes and the probe judges; a manual
    clock: a setup problem, where the probe used to fail "after waiting Retry-After"."""
    with live_mock() as mock:
        slept: list[float] = []
        sleep = advancing(mock) if moving else slept.append
        report = run(
            RunConfig(base_url=mock.base_url, api_key=OWNER, only=["rate-limit"], seed=1,
                      sleep=sleep)
        )  # fmt: skip
    if moving:
        assert report.setup_problem is None and report.verdict == "passed"
        assert any("moves with real time" in note for note in report.notes)
    else:
        assert report.verdict == SETUP_PROBLEM and not report.failures
        assert report.setup_problem and "rate-limit probe" in report.setup_problem


def test_a_plan_larger_than_the_window_on_real_time_proceeds_and_says_how_long():
    with live_mock() as mock:
        report = run(
            RunConfig(base_url=mock.base_url, api_key=OWNER, only=["auth"], max_requests=150,
                      seed=1, sleep=advancing(mock))
        )  # fmt: skip
    assert report.setup_problem is None and report.checks and not report.failures
    plan = [n for n in report.notes if n.startswith("preflight: plan: ")]
    shape = r"preflight: plan: about \d+ requests, at most 150: at 100 a minute, \d+ s at least"
    assert len(plan) == 1 and re.fullmatch(shape, plan[0]), plan
    assert "preflight: the rate window moves with real time" in report.notes
    assert report.requests <= 150


class Drained:
    """A deployment whose rate limit another client drains once the run is under way: from the
    ``allow``-th request with its key on, ``429`` with ``Retry-After: 1``, however long one
    waits (other credentials are refused before any rate limit, as usual)."""

    def __init__(self, allow: int) -> None:
        self.inner = FakeDeployment()
        self.allow = allow
        self.keyed = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and (b"authorization", f"Bearer {KEY}".encode()) in scope["headers"]
        ):
            self.keyed += 1
            if self.keyed > self.allow:
                headers = {"retry-after": "1", "x-ratelimit-limit": "100",
                           "x-ratelimit-remaining": "0", "x-ratelimit-reset": "1",
                           "x-request-id": f"req_{self.keyed}"}  # fmt: skip
                body = {"success": False, "error": "rate limited", "code": "rate_limited"}
                await JSONResponse(body, 429, headers)(scope, receive, send)
                return
        await self.inner(scope, receive, send)


def test_429s_that_outlast_retry_after_during_the_run_end_it_as_a_setup_problem(tmp_path: Path):
    slept: list[float] = []
    with Served(Drained(allow=4)) as deployment:
        report = run(
            RunConfig(base_url=deployment.base_url, api_key=KEY, only=["auth"], seed=1,
                      sleep=slept.append, report_json=tmp_path / "r.json")
        )  # fmt: skip
    assert report.verdict == SETUP_PROBLEM and report.exit_code == 2
    assert report.setup_problem and "does not move" in report.setup_problem
    assert "--api-key" in report.setup_problem
    assert f"after {STUCK_AFTER} Retry-After waits in a row" in report.setup_problem
    assert len(slept) <= STUCK_AFTER + 2  # the honoured waits and a pace or two, then it stops
    assert not report.failures and not report.checks
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == SETUP_PROBLEM


@given(
    requests=st.integers(0, 10_000),
    limit=st.integers(1, 1_000),
    remaining=st.integers(0, 1_000),
    reset=st.integers(1, 60),
)
def test_seconds_at_rate(requests: int, limit: int, remaining: int, reset: int):
    seconds = seconds_at_rate(requests, limit, remaining=remaining, reset=reset)
    if requests <= remaining:
        assert seconds == 0
    else:
        windows = -(-(requests - remaining) // limit)
        assert seconds == reset + (windows - 1) * 60
        assert seconds_at_rate(requests + limit, limit, remaining=remaining, reset=reset) == (
            seconds + 60
        )


def test_the_plan_is_max_requests_or_an_estimate_that_grows_with_the_selection():
    from conformance.api import validate

    def plan(**options: Any) -> int:
        config = RunConfig(base_url="https://api.example", api_key="k", **options)
        return planned_requests(config, validate(config))

    assert plan(max_requests=321) == 321  # at most --max-requests
    assert plan(max_requests=10**6) == plan()
    assert plan(only=["envelope-json"]) < plan(only=["auth"]) < plan()
    assert plan() < plan(allow_spend=True)


# -- keys --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keys", "says"),
    [
        (["--second-key", ADMIN], "--second-key is a key of the --api-key workspace"),
        (["--restricted-key", GLOBEX], "--restricted-key is a key of another workspace"),
        (["--restricted-key", OWNER_2], "--restricted-key acts as the same person as --api-key"),
        (["--restricted-key", "sk_test_nobody"], "--restricted-key is refused"),
        (["--second-key", "sk_test_nobody"], "--second-key is refused"),
        (["--same-person-key", GLOBEX], "--same-person-key is a key of another workspace"),
        (["--same-person-key", "sk_test_nobody"], "--same-person-key is refused"),
    ],
)
def test_a_key_of_the_wrong_kind_is_a_setup_problem(
    mock: Served, keys: list[str], says: str, capsys: pytest.CaptureFixture[str]
):
    argv = ["preflight", "--base-url", mock.base_url, "--api-key", OWNER, *keys,
            "--max-requests", "50"]  # fmt: skip
    status, _, err = outcome(argv, capsys)
    assert status == 2 and says in the_one_line(err)


def test_a_refused_api_key_fails_the_run_with_every_report(
    mock: Served, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    argv = ["run", "--base-url", mock.base_url, "--api-key", "sk_test_nobody",
            "--max-requests", "50", *reports(tmp_path)]  # fmt: skip
    status, _, err = outcome(argv, capsys)
    line = the_one_line(err)
    assert status == 2 and "--api-key is refused" in line
    assert_reports_say_setup_problem(tmp_path, line)


def test_keys_of_the_right_kinds_pass_and_are_described(
    mock: Served, capsys: pytest.CaptureFixture[str]
):
    argv = ["preflight", "--base-url", mock.base_url, "--api-key", OWNER, "--second-key", GLOBEX,
            "--restricted-key", EDITOR, "--max-requests", "50"]  # fmt: skip
    status, out, err = outcome(argv, capsys)
    assert status == 0 and err == ""
    assert "preflight: --restricted-key authenticates" in out
    assert "the workspace of --api-key (both list project" in out
    assert "preflight: --second-key authenticates" in out and "another workspace" in out
    assert "preflight: rate limit: 100 requests a minute" in out
    assert "preflight: 5 requests sent" in out  # openapi, three lists, one more reading


def test_a_same_person_key_is_checked_to_share_the_bucket_of_the_api_key(
    mock: Served, capsys: pytest.CaptureFixture[str]
):
    argv = ["preflight", "--base-url", mock.base_url, "--api-key", OWNER,
            "--same-person-key", OWNER_2, "--max-requests", "50"]  # fmt: skip
    status, out, err = outcome(argv, capsys)
    assert status == 0 and err == ""
    assert "preflight: --same-person-key authenticates" in out
    assert "the workspace of --api-key (both list project" in out
    assert "--same-person-key acts as the same person as --api-key" in out
    assert OWNER_2 not in out


def test_a_same_person_key_of_another_person_is_said_not_refused(
    mock: Served, capsys: pytest.CaptureFixture[str]
):
    # the rule itself (rate-limit-shared-bucket) judges it: a deployment that gives each key a
    # bucket of its own breaks it, and the run must say so rather than stop
    argv = ["preflight", "--base-url", mock.base_url, "--api-key", OWNER,
            "--same-person-key", EDITOR, "--max-requests", "50"]  # fmt: skip
    status, out, _ = outcome(argv, capsys)
    assert status == 0
    assert "--same-person-key does not seem to count in the rate-limit bucket of --api-key" in out


# -- reachability and the receiver ---------------------------------------------------------------


def test_an_unreachable_target_is_a_setup_problem_with_every_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    argv = ["run", "--base-url", f"http://127.0.0.1:{free_port()}", "--api-key", "k",
            *reports(tmp_path)]  # fmt: skip
    status, _, err = outcome(argv, capsys)
    line = the_one_line(err)
    assert status == 2 and "unreachable" in line
    assert_reports_say_setup_problem(tmp_path, line)


@pytest.mark.parametrize("reached", [True, False])
def test_receiver_url_must_reach_the_suites_receiver(
    mock: Served, reached: bool, capsys: pytest.CaptureFixture[str]
):
    port = free_port()
    public = f"http://127.0.0.1:{port if reached else free_port()}"
    argv = ["preflight", "--base-url", mock.base_url, "--api-key", OWNER, "--max-requests", "20",
            "--receiver-listen", f"127.0.0.1:{port}", "--receiver-url", public]  # fmt: skip
    status, out, err = outcome(argv, capsys)
    if reached:
        assert status == 0 and "--receiver-url reaches the suite's receiver" in out
    else:
        assert status == 2 and "--receiver-url does not reach" in the_one_line(err)


@pytest.mark.parametrize(
    ("only", "probed"),
    [("webhooks-url-policy", False), ("webhooks-subscription-deliveries", True)],
)
def test_the_receiver_is_probed_only_for_a_run_that_receives_deliveries(
    mock: Served, only: str, probed: bool, capsys: pytest.CaptureFixture[str]
):
    # An address nothing forwards: a setup problem only where a check awaits deliveries there.
    argv = ["preflight", "--base-url", mock.base_url, "--api-key", OWNER, "--max-requests", "20",
            "--receiver-url", f"http://127.0.0.1:{free_port()}", "--only", only]  # fmt: skip
    status, out, err = outcome(argv, capsys)
    if probed:
        assert status == 2 and "--receiver-url does not reach" in the_one_line(err)
    else:
        assert status == 0 and "--receiver-url: not probed" in out


# -- the bundled mock at --mock-url --------------------------------------------------------------


def test_a_mock_without_private_callbacks_is_a_setup_problem_not_webhook_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    with live_mock(allow_private_callbacks=False) as mock:
        argv = ["run", "--mock-url", mock.base_url, "--only", "webhooks", "--seed", "1",
                *reports(tmp_path)]  # fmt: skip
        status, _, err = outcome(argv, capsys)
    line = the_one_line(err)
    assert status == 2 and "--allow-private-callbacks" in line
    assert_reports_say_setup_problem(tmp_path, line)


def other_fixtures(tmp_path: Path) -> Path:
    """The default fixtures with every key renamed."""
    copy = tmp_path / "fixtures"
    shutil.copytree(fixtures_dir(), copy)
    default = copy / "default.yaml"
    default.write_text(default.read_text().replace("sk_test_", "sk_else_"))
    return default


@pytest.mark.parametrize("mock_settings", ["real clock", "other fixtures"])
def test_no_sandbox_at_a_mock_it_cannot_use_is_a_setup_problem(
    mock_settings: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    real = mock_settings == "real clock"
    settings = {"clock": "real"} if real else {"fixtures": other_fixtures(tmp_path)}
    with live_mock(**settings) as mock:
        argv = ["run", "--mock-url", mock.base_url, "--no-sandbox", "--only", "auth", "--seed",
                "1", *reports(tmp_path)]  # fmt: skip
        status, _, err = outcome(argv, capsys)
    line = the_one_line(err)
    assert status == 2
    assert ("--clock manual" if real else "fixtures' keys") in line
    assert_reports_say_setup_problem(tmp_path, line)


@pytest.mark.parametrize("sandbox", [[], ["--no-sandbox"]])
def test_a_mock_set_up_as_asked_passes_and_the_run_proceeds(
    sandbox: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    path = tmp_path / "r.json"
    with live_mock() as mock:
        argv = ["run", "--mock-url", mock.base_url, *sandbox, "--only", "envelope-json",
                "--max-requests", "40", "--seed", "1", "--report-json", str(path)]  # fmt: skip
        status, out, err = outcome(argv, capsys)
    data = json.loads(path.read_text())
    assert status == 0 and err == "" and data["verdict"] == "passed"
    assert "preflight: the mock accepts the receiver's URL" in out
    assert data["requests"] <= 40
    assert any(n.startswith("preflight: ") for n in data["notes"])
