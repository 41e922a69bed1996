"""Progress in a CI log: when standard output is not a terminal, ``conformance run`` prints a line
as each check starts and ends (with the run's counts), a line for each wait over 5 s (what for,
until when), and never stays silent longer than the heartbeat; ``--quiet`` prints none of it.
Runs with ``--workers N`` show the same, forwarded from the workers."""

from __future__ import annotations

import io
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

import conformance.cli
import conformance.progress
from conformance.api import RunConfig, run, validate
from conformance.checks import all_checks
from conformance.cli import main
from conformance.console import ProgressDisplay
from conformance.progress import ProgressLog, Sent
from conformance.receiver import DELIVERIES
from conformance.target import Wait
from tests.conformance.fake import KEY, FakeDeployment
from tests.conformance.support import Served, free_port, live_mock

LINE = re.compile(r"\[conformance (\d\d):(\d\d)\] (.+)")
COUNTS = r"checks (\d+)/(\d+), (\d+) requests?, (\d+) judgements?, (\d+) failures?"
UNTIL = re.compile(r"until (\d\d):(\d\d):(\d\d) UTC")
ONLY = ["auth-missing-key", "auth-public-contract", "pagination-walk"]
COUNTS_AT_START = "checks 0/3, 0 requests, 0 judgements, 0 failures"
PHASES = ("start envelope-json", "waiting up to", "end envelope-json")


@pytest.fixture(autouse=True)
def plain_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the caller's environment says about colours, stdout here is not a terminal."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def mock_url() -> Iterator[str]:
    with live_mock() as mock:
        yield mock.base_url


def progress(out: str) -> list[str]:
    """The progress lines of ``out``, without their prefix."""
    return [m.group(3) for line in out.splitlines() if (m := LINE.fullmatch(line))]


def status_of(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return int(exit_info.value.code or 0)


def with_sleep(monkeypatch: pytest.MonkeyPatch, sleep: Callable[[float], None]) -> None:
    """``conformance run`` with the suite's waits made by ``sleep`` (the run's own is real)."""
    made = conformance.cli.config_from
    monkeypatch.setattr(conformance.cli, "config_from", lambda a: replace(made(a), sleep=sleep))


def no_sleep(seconds: float) -> None:
    """A wait that takes no time (module-level: a worker process can be given it)."""


def seconds_until(line: str) -> float:
    """How far ahead of now the ``until HH:MM:SS UTC`` of ``line`` is."""
    match = UNTIL.search(line)
    assert match, line
    hours, minutes, seconds = map(int, match.groups())
    now = time.gmtime()
    ahead = hours * 3600 + minutes * 60 + seconds - (now.tm_hour * 3600 + now.tm_min * 60)
    return (ahead - now.tm_sec) % 86400


PREFLIGHT_REQUESTS_AT_A_MOCK_URL = 2  # the contract, and a subscription to the receiver's URL


def test_each_check_has_a_start_and_an_end_line_with_the_runs_counts(
    mock_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    report_path = tmp_path / "report.json"
    argv = ["run", "--mock-url", mock_url, "--seed", "1", "--only", *ONLY,
            "--report-json", str(report_path)]  # fmt: skip
    assert status_of(argv) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out  # no ANSI codes, no carriage returns
    lines = progress(out)
    assert lines[0] == f"{len(ONLY)} checks to run"
    report = {c["name"]: c for c in json.loads(report_path.read_text())["checks"]}
    requests, judgements = PREFLIGHT_REQUESTS_AT_A_MOCK_URL, 0  # counted before any check
    for done, name in enumerate(ONLY):
        starts = [line for line in lines if line.startswith(f"start {name} (")]
        ends = [line for line in lines if line.startswith(f"end {name}: ")]
        assert len(starts) == 1 and len(ends) == 1, lines
        assert lines.index(starts[0]) < lines.index(ends[0])
        before = re.fullmatch(rf"start {name} \({COUNTS}\)", starts[0])
        assert before, starts[0]
        assert before.groups() == tuple(map(str, (done, len(ONLY), requests, judgements, 0)))
        own = report[name]
        requests += own["requests"]
        judgements += own["judgements"]
        after = re.fullmatch(rf"end {name}: passed, (\d+) requests? in \d+ s \({COUNTS}\)", ends[0])
        assert after, ends[0]
        assert int(after.group(1)) == own["requests"] > 0
        assert after.groups()[1:] == tuple(map(str, (done + 1, len(ONLY), requests, judgements, 0)))
    assert "PASSED" in out  # the report follows


@pytest.mark.parametrize("option", ["--quiet", "--no-progress"])
def test_quiet_prints_the_report_and_no_progress(
    option: str, mock_url: str, capsys: pytest.CaptureFixture[str]
):
    argv = ["run", "--mock-url", mock_url, "--seed", "1", "--only", "auth-public-contract"]
    assert status_of([*argv, option]) == 0
    out = capsys.readouterr().out
    assert "PASSED" in out and "auth-public-contract" in out
    assert not progress(out) and "[conformance" not in out


def test_progress_lines_stay_plain_where_colours_are_forced(
    mock_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("FORCE_COLOR", "1")  # as some CI setups do: stdout is still no terminal
    argv = ["run", "--mock-url", mock_url, "--seed", "1", "--only", "auth-public-contract"]
    assert status_of(argv) == 0
    out = capsys.readouterr().out
    shown = [line for line in out.splitlines() if line.startswith("[conformance")]
    assert any(line.startswith("[conformance 00:0") and "end auth-public-contract" in line
               for line in shown)  # fmt: skip
    assert not any("\x1b" in line or "\r" in line for line in shown)


@pytest.mark.parametrize(("retry_after", "announced"), [(40, True), (5, False)])
def test_a_wait_over_5_seconds_says_what_for_and_until_when(
    retry_after: int,
    announced: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
):
    waits: list[float] = []
    with_sleep(monkeypatch, waits.append)
    with Served(FakeDeployment(retry_after_once=retry_after)) as server:
        argv = ["run", "--base-url", server.base_url, "--api-key", KEY, "--only", "envelope-json"]
        assert status_of(argv) == 0
    assert waits == [retry_after]  # the run did wait (through the injected sleep)
    lines = progress(capsys.readouterr().out)
    shown = [line for line in lines if line.startswith("waiting")]
    if not announced:
        assert not shown, lines
        return
    why = "Retry-After on 429 rate_limited, in envelope-json"
    assert len(shown) == 1 and shown[0].startswith(f"waiting up to 40 s for {why}, until ")
    assert 35 <= seconds_until(shown[0]) <= 45
    order = [next(i for i, x in enumerate(lines) if x.startswith(p)) for p in PHASES]
    assert order == sorted(order), lines  # within the check, in the order it happened


def test_the_heartbeat_speaks_when_nothing_else_did(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(conformance.progress, "HEARTBEAT_SECONDS", 0.05)
    out = io.StringIO()

    def sleep(seconds: float) -> None:  # the wait lasts until the heartbeat has spoken of it
        deadline = time.monotonic() + 10
        while "still waiting for" not in out.getvalue() and time.monotonic() < deadline:
            threading.Event().wait(0.01)

    with_sleep(monkeypatch, sleep)
    with Served(FakeDeployment(retry_after_once=600)) as server, redirect_stdout(out):
        argv = ["run", "--base-url", server.base_url, "--api-key", KEY, "--only", "envelope-json"]
        assert status_of(argv) == 0
    lines = progress(out.getvalue())
    order = [next(i for i, x in enumerate(lines) if x.startswith(p)) for p in PHASES]
    beat = next(i for i, line in enumerate(lines) if line.startswith("still waiting for"))
    assert order[1] < beat < order[2], lines
    assert lines[beat].startswith("still waiting for Retry-After on 429 rate_limited")
    assert lines[order[1]].startswith("waiting up to 120 s")  # capped by the run's wait cap
    assert 100 <= seconds_until(lines[beat]) <= 125
    assert not [t for t in threading.enumerate() if t.name == "progress"]  # stopped at the end


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_heartbeat_names_the_running_check_and_its_requests():
    checks = [c for c in all_checks() if c.name in ONLY]
    out, clock = io.StringIO(), Clock()
    log = ProgressLog(out, checks, interval=30, clock=clock, now=lambda: 0.0)
    log("check-start", checks[0])
    log("requests", Sent(checks[0].name, 7))
    clock.now += 29
    log.beat()
    assert progress(out.getvalue()) == [f"start {checks[0].name} ({COUNTS_AT_START})"]
    clock.now += 1
    log.beat()
    assert progress(out.getvalue())[-1] == (
        f"still running {checks[0].name}: 7 requests, elapsed 00:30 "
        f"(checks 0/{len(checks)}, 7 requests, 0 judgements, 0 failures)"
    )
    clock.now += 29
    log.beat()  # a heartbeat is a line too: the next one is due 30 s after it
    assert len(progress(out.getvalue())) == 2
    log("wait", Wait(90.0, "polling jobs", 3723.4, checks[0].name))
    clock.now += 30
    log.beat()
    assert progress(out.getvalue())[-2:] == [
        f"waiting up to 90 s for polling jobs, in {checks[0].name}, until 01:02:03 UTC",
        f"still waiting for polling jobs, in {checks[0].name}, until 01:02:03 UTC",
    ]


def test_what_a_deployment_says_cannot_break_the_log():
    out = io.StringIO()
    log = ProgressLog(out, [], now=lambda: 0.0)
    log("wait", Wait(60.0, "Retry-After on 429 \x1b[2J\r\nrate_limited", 60.0))
    assert out.getvalue().count("\n") == 1 and "\x1b" not in out.getvalue()
    assert progress(out.getvalue()) == [
        "waiting up to 60 s for Retry-After on 429 [2J rate_limited, until 00:01:00 UTC"
    ]


def test_worker_runs_show_each_check_and_the_requests_of_every_worker(
    mock_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    report_path = tmp_path / "report.json"
    argv = ["run", "--mock-url", mock_url, "--seed", "1", "--workers", "2", "--only", *ONLY,
            "--report-json", str(report_path)]  # fmt: skip
    assert status_of(argv) == 0
    lines = progress(capsys.readouterr().out)
    for name in ONLY:
        assert sum(line.startswith(f"start {name} (") for line in lines) == 1, lines
        assert sum(line.startswith(f"end {name}: passed") for line in lines) == 1, lines
    last = re.search(COUNTS, [line for line in lines if line.startswith("end ")][-1])
    assert last, lines
    report = json.loads(report_path.read_text())
    # every request but each worker's opening fetch of the contract, counted in the workers
    expected = (len(ONLY), len(ONLY), report["requests"] - 2)
    assert tuple(map(int, last.groups()[:3])) == expected


def test_a_workers_wait_reaches_the_log(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
):
    with_sleep(monkeypatch, no_sleep)
    with Served(FakeDeployment(retry_after_once=40)) as server:
        argv = ["run", "--base-url", server.base_url, "--api-key", KEY, "--workers", "2",
                "--only", "envelope-json", "auth-public-contract"]  # fmt: skip
        assert status_of(argv) == 0
    lines = progress(capsys.readouterr().out)
    assert any(
        line.startswith("waiting up to 40 s for Retry-After on 429 rate_limited, in envelope-json")
        for line in lines
    ), lines


def test_a_wait_for_webhook_deliveries_is_announced():
    port = free_port()
    receiver = f"http://127.0.0.1:{port}"
    gate = threading.Event()  # the fake delivers once the wait was announced
    fake = FakeDeployment(receiver_prefix=receiver + "/", deliver_when=gate)
    out = io.StringIO()
    with Served(fake) as server:
        config = RunConfig(
            base_url=server.base_url,
            api_key=KEY,
            allow_spend=True,
            only=["webhooks-subscription-deliveries"],
            receiver_listen=f"127.0.0.1:{port}",
            receiver_url=receiver,
            webhook_wait=10,
            seed=1,
        )
        log = ProgressLog(out, validate(config))

        def listen(event: str, payload: Any) -> None:
            log(event, payload)
            if event == "wait" and payload.why == DELIVERIES:
                gate.set()

        config.on_event = listen
        with log:
            report = run(config)
    assert report.result("webhooks-subscription-deliveries").status == "passed"
    lines = progress(out.getvalue())
    assert any(
        line.startswith(f"waiting up to 10 s for {DELIVERIES}, in webhooks-subscription-deliveries")
        for line in lines
    ), lines


def test_the_start_of_the_bundled_mock_is_announced(capsys: pytest.CaptureFixture[str]):
    assert status_of(["run", "--mock", "--seed", "1", "--only", "auth-public-contract"]) == 0
    lines = progress(capsys.readouterr().out)
    starting = "waiting up to 30 s for the bundled mock to start, until "
    assert [x for x in lines if x.startswith(("waiting", "start "))][:2] == [
        next(x for x in lines if x.startswith(starting)),
        "start auth-public-contract (checks 0/1, 0 requests, 0 judgements, 0 failures)",
    ]


def test_the_terminal_progress_bar_shows_a_long_wait_until_the_next_request():
    checks = [c for c in all_checks() if c.name in ONLY]
    name = checks[0].name
    display = ProgressDisplay(Console(file=io.StringIO(), force_terminal=True), checks)
    task = display.progress.tasks[0]
    display("check-start", checks[0])
    display("wait", Wait(3.0, "a short wait", 0.0, name))
    assert task.description == name
    display("wait", Wait(45.0, "polling jobs", 3723.0, name))
    assert task.description == f"waiting up to 45 s for polling jobs, in {name}, until 01:02:03 UTC"
    display("requests", Sent(name, 2))  # a worker's requests: the wait is over
    assert task.description == name and display.requests == 2
