"""Writes across workers: throughput, refusals and CPU per request of mixed writes on PostgreSQL.

    python bench/writes.py [--seconds 10] [--runs 3] [--workers 1,2,4] [--sandboxes 32]
                           [--only memory,world,sandboxes] [--pg-url URL]

wrk (32 connections, one thread, pinned to CPU 1 when taskset can) runs bench/writes.lua:
80% reads (project lists, campaign lists, capabilities) and 20% product creates, for a 2 s
warm-up (12 s with sandboxes: each worker builds each sandbox's runtime when it first serves
it) and then the measured ``--seconds``. Configurations: one in-memory process (the
reference); PostgreSQL with each number of ``--workers`` on one world (every request as the
acme owner); and the same spread over ``--sandboxes`` sandboxes (one world each, request n as
sandbox n's owner). Each is a new ``mockserver --clock manual --rate-limit 100000000`` on a new
schema; the mock and the database are left unpinned.

Printed per run: requests/s, p50/p99 latency, responses that were not 2xx (by status), socket
errors (wrk's, its 2 s timeouts included), and CPU per completed request in microseconds, of
the mock (all its workers) and of the database server apart (from /proc, before and after the
measured run), and the database's transactions per request (pg_stat_database: each statement
of the mock's is one, a write refused for a conflict too) and, of them, those rolled back (the
writes refused for a conflict, each run again caught up). Then, per configuration: the
median and the spread (min-max) over ``--runs`` runs, and the ratio of the median requests/s
to that of one worker on the same kind of store. CPU per request is the steadier figure on a
machine shared with other work. Without --pg-url a throwaway PostgreSQL cluster (server
defaults: fsync on) is started and removed at exit.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from stores import (  # bench/
    fresh_schema,
    inspect_server,
    rolled_back,
    start_cluster,
    stop_on_sigterm,
)
from wrkmix import (  # bench/wrkmix.py
    CONNECTIONS,
    HERE,
    ON_CPU_1,
    OWNER,
    WARM_UP_SECONDS,
    Figures,
    read_figures,
    run_wrk,
    set_affinity,
    start_server,
    stop_server,
    tree_cpu,
)

SCRIPT = HERE / "writes.lua"
# Every worker builds a sandbox's runtime when it first serves it (32 sandboxes x 4 workers:
# 128 builds): the warm-up of the sandbox configurations outlasts them.
SANDBOX_WARM_UP_SECONDS = 12


@dataclass
class Run(Figures):
    mock_us: float = 0.0
    db_us: float | None = None
    statements: float | None = None  # database transactions per request (each statement one)
    refused: float | None = None  # of them, rolled back per request (writes refused: conflicts)


@dataclass
class Config:
    name: str
    store: str  # memory | postgresql
    workers: int = 1
    sandboxes: int = 0
    runs: list[Run] = field(default_factory=list)

    @property
    def label(self) -> str:
        if self.store == "memory":
            return "in memory, 1 process"
        where = f"{self.sandboxes} sandboxes" if self.sandboxes else "one world"
        return f"PostgreSQL, {self.workers} worker{'s' * (self.workers > 1)}, {where}"


def control(base: str, method: str, path: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        f"{base}/_mock{path}",
        data=json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def keys_for(base: str, sandboxes: int) -> list[str]:
    """The keys the load is sent with: the acme owner's, or each new sandbox's owner's."""
    if not sandboxes:
        return [OWNER]
    keys = []
    for _ in range(sandboxes):
        made = control(base, "POST", "/sandboxes", {"workspace": "acme"})["sandbox"]
        keys.append(next(k["key"] for k in made["keys"] if k["role"] == "owner"))  # type: ignore[index]
    return keys


def settle(pid: int, timeout: float = 180.0) -> None:
    """Wait until a just-started mock and its workers are idle (every worker has built its
    world: the supervisor says it listens before they have)."""
    deadline = time.monotonic() + timeout
    before = tree_cpu(pid)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = tree_cpu(pid)
        if now - before < 0.05:
            return
        before = now
    raise RuntimeError("the mock did not settle after start")


def measure(config: Config, seconds: int, pg_url: str | None, postmaster: int | None) -> Run:
    arguments = []
    if config.store == "postgresql":
        assert pg_url is not None
        arguments = ["--store", fresh_schema(pg_url, STACK), "--workers", str(config.workers)]
    pin_wrk = ON_CPU_1 if TASKSET else []
    database = postmaster if config.store == "postgresql" else None
    server = start_server(arguments, [])
    try:
        settle(server.process.pid)
        keys = ",".join(keys_for(server.base, config.sandboxes))
        warm_up = SANDBOX_WARM_UP_SECONDS if config.sandboxes else WARM_UP_SECONDS
        run_wrk(server.base, warm_up, [keys], pin_wrk, SCRIPT)
        xacts_before = rolled_back(pg_url) if database is not None else (0, 0)
        mock_before = tree_cpu(server.process.pid)
        db_before = tree_cpu(database) if database is not None else 0.0
        figures = run_wrk(server.base, seconds, [keys], pin_wrk, SCRIPT)
        mock_cpu = tree_cpu(server.process.pid) - mock_before
        db_cpu = tree_cpu(database) - db_before if database is not None else None
        xacts = rolled_back(pg_url) if database is not None else None
    finally:
        stop_server(server)
    run = Run()
    read_figures(run, figures)
    per_request = 1e6 / max(run.requests, 1)
    run.mock_us = mock_cpu * per_request
    run.db_us = None if db_cpu is None else db_cpu * per_request
    if xacts is not None:
        run.statements = (xacts[0] - xacts_before[0]) / max(run.requests, 1)
        run.refused = (xacts[1] - xacts_before[1]) / max(run.requests, 1)
    return run


def describe(config: Config, run: Run) -> str:
    refused = ", ".join(f"{n} x {status}" for status, n in sorted(run.statuses.items()))
    db = "" if run.db_us is None else f", database {run.db_us:,.0f} us"
    if run.statements is not None:
        db += f"; {run.statements:.2f} statements/request, {run.refused:.3f} refused"
    line = (
        f"{config.label}: {run.rate:,.0f} req/s, p50 {run.p50_ms:.1f} ms, p99 {run.p99_ms:.1f} ms,"
        f" non-2xx {run.non2xx}{f' ({refused})' if refused else ''}, socket errors"
        f" {run.socket_errors};"
        f" CPU/request: mock {run.mock_us:,.0f} us{db}"
    )
    for sample in run.samples[:1]:
        line += f"\n    e.g. {sample}"
    return line


def spread(values: list[float], fmt: str = ",.0f") -> str:
    middle = statistics.median(values)
    if len(values) == 1:
        return format(middle, fmt)
    return f"{middle:{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def table(configs: list[Config]) -> None:
    print("\n| configuration | req/s, median (min-max) | × 1 worker | non-2xx (all runs) |"
          " socket errors | mock CPU/request, µs | database CPU/request, µs |"
          " statements/request | refused writes/request |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    base: dict[int, float] = {}  # sandboxes (0: one world) -> 1-worker median
    for config in configs:
        rate = statistics.median(run.rate for run in config.runs)
        if config.store == "postgresql" and config.workers == 1:
            base[config.sandboxes] = rate
        ratio = rate / base[config.sandboxes] if config.sandboxes in base else None
        refused = sum(run.non2xx for run in config.runs)
        broken = sum(run.socket_errors for run in config.runs)
        db = [run.db_us for run in config.runs if run.db_us is not None]
        statements = [run.statements for run in config.runs if run.statements is not None]
        refusals = [run.refused for run in config.runs if run.refused is not None]
        print(
            f"| {config.label} | {spread([run.rate for run in config.runs])} |"
            f" {'' if ratio is None or config.store == 'memory' else f'{ratio:.2f}'} |"
            f" {refused} | {broken} | {spread([run.mock_us for run in config.runs])} |"
            f" {spread(db) if db else '–'} | {spread(statements, '.2f') if statements else '–'} |"
            f" {spread(refusals, '.3f') if refusals else '–'} |"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10, help="measured run (default 10)")
    parser.add_argument("--runs", type=int, default=3, help="runs per configuration (default 3)")
    parser.add_argument("--workers", default="1,2,4", help="worker counts (default 1,2,4)")
    parser.add_argument("--sandboxes", type=int, default=32, help="sandboxes (default 32)")
    parser.add_argument(
        "--only", default="memory,world,sandboxes", help="kinds (default memory,world,sandboxes)"
    )
    parser.add_argument("--pg-url", help="PostgreSQL server (default: a throwaway cluster)")
    args = parser.parse_args()
    args.workers = [int(n) for n in args.workers.split(",") if n.strip()]
    args.only = {kind.strip() for kind in args.only.split(",") if kind.strip()}
    if unknown := args.only - {"memory", "world", "sandboxes"}:
        parser.error(f"unknown kind(s) {', '.join(sorted(unknown))}")
    return args


def configurations(args: argparse.Namespace) -> list[Config]:
    configs = [Config("memory", "memory")] if "memory" in args.only else []
    for kind, sandboxes in (("world", 0), ("sandboxes", args.sandboxes)):
        if kind in args.only:
            for workers in args.workers:
                configs.append(Config(kind, "postgresql", workers, sandboxes))
    return configs


STACK = contextlib.ExitStack()
TASKSET = shutil.which("taskset") is not None and {0, 1} <= os.sched_getaffinity(0)


def main() -> None:
    args = parse_args()
    stop_on_sigterm()
    with STACK:
        tmp = Path(tempfile.mkdtemp(prefix="bench-writes-"))
        STACK.callback(shutil.rmtree, tmp, ignore_errors=True)
        configs = configurations(args)
        pg_url, postmaster, facts = None, None, ""
        if any(config.store == "postgresql" for config in configs):
            pg_url = args.pg_url or start_cluster(STACK)
            postmaster, facts = inspect_server(pg_url)
            if postmaster is not None:
                set_affinity(postmaster, os.sched_getaffinity(0))
        print(
            f"wrk: {CONNECTIONS} connections, 1 thread, bench/writes.lua (80% reads, 20% product"
            f" creates); {WARM_UP_SECONDS} s warm-up, {args.seconds} s measured, {args.runs}"
            f" run(s) each, interleaved; {os.cpu_count()} CPUs; {facts}"
        )
        try:
            for _ in range(args.runs):  # interleaved: a busy moment of the machine hits all
                for config in configs:
                    config.runs.append(measure(config, args.seconds, pg_url, postmaster))
                    print(describe(config, config.runs[-1]), flush=True)
        except KeyboardInterrupt:
            print("\ninterrupted; cleaning up", file=sys.stderr)
            raise SystemExit(130) from None
        table([config for config in configs if config.runs])


if __name__ == "__main__":
    main()
