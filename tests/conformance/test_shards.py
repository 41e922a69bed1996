"""N shard jobs against one shared mock: each in a sandbox of its own, together one full run."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from conformance.api import RunConfig, run, validate, worker_count
from conformance.checks import Check, shard
from conformance.mockprocess import fixture_keys, owner_key
from conformance.results import Report
from tests.conformance.support import live_mock

ONLY = ["envelope", "auth", "pagination", "idempotency", "limits"]
SHARDS = 3


def makes_requests(report: Report, full: list[Check]) -> set[str]:
    """The checks of ``report`` that make requests only (observers go with every shard)."""
    pure = {c.name for c in full if c.observe is None}
    return {c.name for c in report.checks} & pure


class SandboxWatch:
    """Lists the mock's live sandboxes, over and over, until stopped."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.seen: set[str] = set()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True)

    def watch(self) -> None:
        with httpx.Client(base_url=self.base_url, timeout=30) as client:
            while not self.stopped.wait(0.02):
                for sandbox in client.get("/_mock/sandboxes").json()["sandboxes"]:
                    self.seen.add(sandbox["id"])

    def __enter__(self) -> SandboxWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join()


def test_shards_against_one_mock_run_each_check_once_each_in_its_own_sandbox():
    owner = owner_key(fixture_keys())
    assert owner is not None
    with live_mock() as mock, httpx.Client(base_url=mock.base_url, timeout=30) as control:
        control.post("/_mock/reset").raise_for_status()
        credits = control.get(f"/_mock/workspaces/{owner.workspace}/credits").json()["balance"]
        full = validate(RunConfig(mock_url=mock.base_url, only=ONLY))

        def one_shard(index: int) -> Report:
            return run(RunConfig(mock_url=mock.base_url, seed=1, only=ONLY,
                                 shard=(index, SHARDS)))  # fmt: skip

        with SandboxWatch(mock.base_url) as watch, ThreadPoolExecutor(SHARDS) as pool:
            reports = list(pool.map(one_shard, range(1, SHARDS + 1)))
        left = control.get("/_mock/sandboxes").json()["sandboxes"]
        journal = control.get("/_mock/requests", params={"limit": 1000}).json()["requests"]
        after = control.get(f"/_mock/workspaces/{owner.workspace}/credits").json()["balance"]
        ended = {control.get(f"/_mock/sandboxes/{s}").status_code for s in watch.seen}

    # together the shards run exactly the checks of one full run, each exactly once
    dealt = [makes_requests(report, full) for report in reports]
    assert sum(map(len, dealt)) == len(set().union(*dealt))
    assert set().union(*dealt) == {c.name for c in full if c.observe is None}
    for report in reports:
        assert {c.name for c in full if c.observe is not None} <= {c.name for c in report.checks}
        assert report.exit_code == 0, [f"{f.check}: {f.message}" for f in report.failures]
    # each shard made a sandbox of its own through the control plane (and its preflight one
    # more, for its own requests), and ended them. The watcher looks every 20 ms: it sees each
    # shard's sandbox (it lives as long as the shard), but may miss a preflight's, which can
    # live less than that on a quick machine (a fresh clone's CI saw 5 of 6).
    assert SHARDS <= len(watch.seen) <= 2 * SHARDS and left == [] and ended == {404}
    # the base world saw no request made with a key (nor any spending); the only requests it
    # answered are those without a usable key, which no mock can place in a sandbox
    assert journal, "requests without a key reach the base world"
    assert all(entry["keyId"] is None for entry in journal)
    assert all(entry["status"] == 401 or entry["operationId"] == "getOpenApi" for entry in journal)
    assert after == credits


@pytest.mark.parametrize("count", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("workers", [1, 2, 3])
def test_workers_deal_each_shard_exactly(count: int, workers: int):
    """shard I/N, then worker k/W of it: every check that makes requests runs exactly once."""
    full = validate(RunConfig(mock=True))
    active = [c.name for c in full if c.run is not None]
    runs: list[str] = []
    for index in range(1, count + 1):
        part = validate(RunConfig(mock=True, shard=(index, count)))
        for k in range(1, workers + 1):
            mine = shard(part, k, workers)
            assert [c.name for c in full if c.observe] == [c.name for c in mine if c.observe]
            runs += [c.name for c in mine if c.run is not None]
    assert Counter(runs) == Counter(active)


def test_more_workers_than_checks_start_only_as_many_as_there_are_checks():
    config = RunConfig(mock=True, only=["auth-public-contract", "envelope-request-id"], workers=4)
    assert worker_count(config, validate(config)) == 1
    config = RunConfig(mock=True, only=["auth"], workers=64)
    assert worker_count(config, validate(config)) == len(validate(config))
