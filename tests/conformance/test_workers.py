"""``--workers N``: checks dealt to worker processes, each in a sandbox of its own against the
mock; the same verdicts as one process; a worker that dies is a failed ``crash`` result; workers
are forks of a fork server that imported the suite once (spawned where there is none)."""

from __future__ import annotations

import gc
import json
import multiprocessing
import os
import sys
import time
from collections import Counter
from multiprocessing.connection import Connection
from typing import Any

import httpx
import pytest

import conformance.workers
from conformance.api import Outcome, RunConfig, validate
from conformance.checks import shard
from conformance.gcpolicy import THRESHOLDS
from conformance.outcomes import CheckResult, Failure
from conformance.results import Report
from conformance.sandboxes import Where
from conformance.skips import NOTHING_TO_JUDGE
from conformance.workers import (
    PRELOAD,
    Job,
    Worker,
    checks_of,
    merge,
    run_workers,
    work,
    worker_context,
    world,
)
from tests.conformance.support import live_mock, run_quietly

#: Enough families to deal out, with webhooks (a receiver per worker) and the rate-limit probe
#: (a worker drives its key into 429: only its own sandbox's bucket).
MIXED = ["envelope", "auth", "pagination", "idempotency", "webhooks", "limits", "rate-limit"]


def verdicts(report: Report) -> dict[str, tuple[str, frozenset[str]]]:
    return {c.name: (c.status, frozenset(f.rule for f in c.failures)) for c in report.checks}


def observed(report: Report) -> int:
    """The exchanges an observer judged: every request but each process's opening fetch."""
    result = report.result("envelope-request-id")
    assert result is not None
    return result.requests


def test_two_workers_give_the_verdicts_of_one_process():
    events: list[tuple[str, str]] = []
    sent: list[int] = []

    def progress(event: str, payload: Any) -> None:
        if event == "requests":  # the workers' requests, counted in batches
            sent.append(payload.count)
        elif event in ("check-start", "check-end"):
            events.append((event, payload.name))

    one = run_quietly(mock=True, allow_spend=True, seed=1, only=MIXED)
    two = run_quietly(mock=True, allow_spend=True, seed=1, only=MIXED, workers=2, on_event=progress)
    assert [c.name for c in two.checks] == [c.name for c in one.checks]
    selected = validate(RunConfig(mock=True, only=MIXED))
    ended = Counter(name for event, name in events if event == "check-end")
    assert ended == Counter(c.name for c in selected if c.run is not None)  # coarse progress
    assert sum(sent) == two.requests - 2  # all but each worker's opening fetch, few messages
    assert len(sent) < two.requests / 10
    assert verdicts(two) == verdicts(one)
    assert one.exit_code == two.exit_code == 0, [f.message for f in two.failures]
    rate = two.result("rate-limit")
    assert rate is not None and rate.status == "passed"
    assert not [n for n in two.notes if n.startswith("waited")]  # the clock was moved
    # the totals are the workers' sums: each worker fetched the contract once, then its
    # observers judged every exchange of its own
    assert observed(one) == one.requests - 1
    assert observed(two) == two.requests - 2


def test_failures_are_the_same_with_workers():
    with live_mock(defects=["no-rate-limit-headers"]) as mock:
        only = ["envelope", "auth", "pagination"]
        one = run_quietly(mock_url=mock.base_url, seed=3, only=only)
        two = run_quietly(mock_url=mock.base_url, seed=3, only=only, workers=2)
        left = httpx.get(f"{mock.base_url}/_mock/sandboxes").json()["sandboxes"]
    assert verdicts(two) == verdicts(one)
    assert "envelope-rate-limit-headers" in two.failed_checks()
    assert two.exit_code == 1
    assert left == []  # every worker ended its sandbox


def test_merging_sums_observers_and_takes_each_check_from_its_worker():
    checks = validate(RunConfig(mock=True, only=["auth-public-contract", "auth-workspace-slug",
                                                  "envelope-request-id"]))  # fmt: skip
    assert [c.name for c in checks if c.run is None] == ["envelope-request-id"]
    where = Where("http://mock.invalid", "k")

    def worker(index: int, requests: int, passed: int) -> Worker:
        part = shard(checks, index, 2)
        names, runs = [c.name for c in part], [c.name for c in part if c.run]
        job = Job(index, 2, tuple(names), tuple(runs), RunConfig(mock=True), where, 1)
        active = next(c for c in part if c.run is not None)
        own = CheckResult(active.name, active.family, active.description, requests, passed=1)
        seen = CheckResult("envelope-request-id", "envelope", "", requests, passed=passed)
        seen.failures.append(Failure("envelope-request-id", "rule", f"from {index}"))
        done = Outcome([seen], requests + 1, [f"note {index}"])
        return Worker(job, None, None, part, {active.name: own}, done)  # type: ignore[arg-type]

    outcome = merge(checks, [worker(1, 3, 2), worker(2, 5, 0)], seed=1)
    by_name = {r.name: r for r in outcome.results}
    assert [r.name for r in outcome.results] == [c.name for c in checks]
    assert outcome.requests == 4 + 6 and outcome.notes == ["note 1", "note 2"]
    merged = by_name["envelope-request-id"]
    assert (merged.requests, merged.passed, merged.failed) == (8, 2, 2)
    assert [f.message for f in merged.failures] == ["from 1", "from 2"]
    assert NOTHING_TO_JUDGE not in merged.skipped
    assert by_name["auth-public-contract"].requests == 3
    assert by_name["auth-workspace-slug"].requests == 5


def dies_in_its_sandbox(job: Job, conn: Connection) -> None:
    """Worker 1 makes its sandbox, ends one check, and dies; the others work as usual."""
    if job.index != 1:
        work(job, conn)
        return
    first = next(c for c in checks_of(job) if c.run is not None)
    with world(job, lambda kind, payload: conn.send((kind, payload))):
        result = CheckResult(first.name, first.family, first.description, 1, passed=1)
        conn.send(("check-end", result))
        os._exit(7)


def test_a_dying_worker_is_a_crash_of_its_unfinished_checks_and_its_sandbox_is_ended():
    only = ["auth-public-contract", "auth-workspace-slug", "pagination-limit-bounds",
            "envelope-request-id"]  # fmt: skip
    with live_mock() as mock:
        config = RunConfig(mock_url=mock.base_url, only=only, workers=2)
        checks = validate(config)
        where = Where(mock.base_url, "unused")
        started = time.monotonic()
        outcome = run_workers(config, where, checks, 1, 2, entry=dies_in_its_sandbox)
        elapsed = time.monotonic() - started
        left = httpx.get(f"{mock.base_url}/_mock/sandboxes").json()["sandboxes"]
    results = {r.name: r for r in outcome.results}
    first, second = shard(checks, 1, 2), shard(checks, 2, 2)
    mine = [c.name for c in first if c.run is not None]
    assert mine == ["auth-public-contract", "pagination-limit-bounds"]
    assert results["auth-public-contract"].status == "passed"  # sent before it died
    crash = results["pagination-limit-bounds"].failures
    assert [f.rule for f in crash] == ["crash"] and "exit code 7" in crash[0].message
    for check in second:
        if check.run is not None:
            assert results[check.name].status == "passed", results[check.name].failures
    assert results["envelope-request-id"].status == "passed"  # worker 2's exchanges
    assert left == []  # the parent ended the sandbox the dead worker left
    assert elapsed < 60


def test_a_worker_that_cannot_start_its_checks_fails_them_as_crashes():
    config = RunConfig(base_url="http://127.0.0.1:9", api_key="k", only=["auth"], workers=2)
    checks = validate(config)
    outcome = run_workers(config, Where("http://127.0.0.1:9", "k"), checks, 1, 2, entry=raises)
    statuses = Counter(r.status for r in outcome.results if r.name.startswith("auth-"))
    assert statuses == Counter(failed=len([c for c in checks if c.run is not None]))
    assert all("ValueError: broken worker" in r.failures[0].message for r in outcome.results)


def raises(job: Job, conn: Connection) -> None:
    """A worker whose every run raises (the change is made in the worker's process only)."""
    import conformance.workers

    def broken(*_: object) -> None:
        raise ValueError("broken worker")

    conformance.workers.execute = broken  # type: ignore[assignment]
    work(job, conn)


def test_a_worker_against_an_unreachable_target_makes_the_run_unreachable():
    """(The preflight finds an unreachable target before any worker starts: here the target
    goes away after it.)"""
    from conformance.api import TargetUnreachable

    config = RunConfig(base_url="http://127.0.0.1:9", api_key="k", only=["auth"], workers=2)
    try:
        run_workers(config, Where(config.base_url or "", "k"), validate(config), 1, 2)
    except TargetUnreachable as exc:
        assert "127.0.0.1:9" in str(exc)
    else:
        raise AssertionError("an unreachable target must raise")


def test_a_worker_of_a_shard_makes_only_the_requests_of_its_shard():
    """With --shard and --workers, a check that observes and makes requests is sent to every
    worker, and makes its requests in the one worker of the one shard it is dealt to."""
    both = [c.name for c in validate(RunConfig(mock=True)) if c.run and c.observe]
    assert both
    runs: list[str] = []
    for index in (1, 2, 3):
        part = validate(RunConfig(mock=True, shard=(index, 3)))
        for k in (1, 2):
            mine = shard(part, k, 2)
            job = Job(k, 2, tuple(c.name for c in mine), tuple(c.name for c in mine if c.run),
                      RunConfig(mock=True), Where("http://mock.invalid", "k"), 1)  # fmt: skip
            checks = checks_of(job)  # as the worker process rebuilds them
            assert [c.name for c in checks] == [c.name for c in mine]
            assert set(both) <= {c.name for c in checks if c.observe}
            runs += [c.name for c in checks if c.run is not None]
    assert Counter(runs) == Counter(c.name for c in validate(RunConfig(mock=True)) if c.run)


# -- how workers start --------------------------------------------------------------------------

MARK = "CONFORMANCE_TEST_WORKER_MARK"


def tells_how_it_started(job: Job, conn: Connection) -> None:
    """A worker that runs as :func:`work` does, but whose ``execute`` only says how its process
    started: its parent, what was imported before it ran, its collector, its environment."""
    missing = [name for name in PRELOAD if name not in sys.modules]  # what the server imported

    def execute(config: RunConfig, where: Where, checks: list[Any], *_: object) -> Outcome:
        parent = os.getppid()
        facts = {
            "index": job.index,
            "pid": os.getpid(),
            "parent": parent,
            "parent_command": read(f"/proc/{parent}/cmdline").replace("\0", " "),
            "parent_threads": [
                line.split()[1]
                for line in read(f"/proc/{parent}/status").splitlines()
                if line.startswith("Threads:")
            ],
            "missing": missing,
            "gc": list(gc.get_threshold()),
            "mark": os.environ.get(MARK),
        }
        results = [CheckResult(c.name, c.family, c.description) for c in checks]
        return Outcome(results, 0, [json.dumps(facts)])

    conformance.workers.execute = execute  # type: ignore[assignment]  # in this process only
    work(job, conn)


def read(path: str) -> str:
    try:
        with open(path) as file:
            return file.read()
    except OSError:
        return ""


def start_facts(mark: str) -> list[dict[str, Any]]:
    config = RunConfig(base_url="http://127.0.0.1:9", api_key="k", only=["auth"], workers=2)
    where = Where("http://127.0.0.1:9", "k")
    outcome = run_workers(config, where, validate(config), 1, 2, entry=tells_how_it_started)
    facts = sorted((json.loads(note) for note in outcome.notes), key=lambda f: f["index"])
    assert [f["index"] for f in facts] == [1, 2]
    assert all(f["mark"] == mark for f in facts)  # the parent's environment of the moment
    assert all(f["gc"] == list(THRESHOLDS) for f in facts)  # conformance/gcpolicy.py
    return facts


def test_workers_are_forks_of_a_single_threaded_server_that_imported_the_suite(monkeypatch):
    if not sys.platform.startswith("linux"):
        pytest.skip("workers are spawned off Linux (the next test)")
    monkeypatch.setenv(MARK, "first")
    first = start_facts("first")
    monkeypatch.setenv(MARK, "second")  # after the server started: a fork has its environment
    second = start_facts("second")
    for facts in first + second:
        assert facts["parent"] != os.getpid()  # not this process's children: the server's
        assert "multiprocessing.forkserver" in facts["parent_command"], facts
        assert facts["parent_threads"] == ["1"]  # one thread: a fork of it is safe
        assert facts["missing"] == []  # the suite was imported before the worker began
    assert len({f["parent"] for f in first + second}) == 1  # one server, started once
    assert len({f["pid"] for f in first + second}) == 4


def test_workers_are_spawned_where_there_is_no_fork_server():
    assert worker_context("darwin").get_start_method() == "spawn"
    assert worker_context("win32").get_start_method() == "spawn"
    if "forkserver" in multiprocessing.get_all_start_methods():
        assert worker_context("linux").get_start_method() == "forkserver"


def test_the_fork_server_keeps_the_callers_preloads_and_default_start_method(monkeypatch):
    if "forkserver" not in multiprocessing.get_all_start_methods():
        pytest.skip("this platform has no fork server")
    from multiprocessing import forkserver

    server = forkserver._forkserver  # type: ignore[attr-defined]
    monkeypatch.setattr(server, "_preload_modules", ["__main__", "json"])
    default = multiprocessing.get_start_method(allow_none=True)
    worker_context("linux")
    worker_context("linux")  # added once
    assert server._preload_modules == ["__main__", "json", *PRELOAD]
    assert multiprocessing.get_start_method(allow_none=True) == default
