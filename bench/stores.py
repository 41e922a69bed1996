"""Throughput and server CPU per request of the mock on each store, under wrk and a standard mix.

    python bench/stores.py [--seconds 10] [--only memory,sqlite,pg1,pg2] [--pg-url URL]

Configurations: in memory; SQLite (``--state`` a new file); PostgreSQL with one worker
(``--store URL``) and with two (``--workers 2``), each on a new schema. Every one is a new
``mockserver --clock manual --rate-limit 100000000`` on a fresh store, given 25 finished jobs
(control plane) and second-page cursors before wrk (32 connections, one thread) runs
bench/mix.lua for a 2 s warm-up and then the measured ``--seconds``. Printed per
configuration: requests/s, p50/p99 latency (wrk), responses that were not 2xx, and server CPU
per completed request in microseconds: utime+stime (from /proc, before and after the measured
run) of the mock with all its child processes, and of every process of the PostgreSQL server,
apart; on PostgreSQL also the database's transactions per request under the load
(pg_stat_database; each statement of the mock is one), fewer than a lone request's round trips
because requests that arrive together share one catch-up. Then a table, the ratios of
requests/s to in-memory against their targets, and the PostgreSQL round trips of a lone
request of each operation of the mix, counted in-process on the store's psycopg connection (a
statement outside a pipeline, or a whole pipeline: one each).

With taskset, wrk runs on CPU 1, and in the one-worker configurations the mock and the
database on CPU 0; with two workers the mock and the database are left unpinned. Without
--pg-url a throwaway PostgreSQL cluster (/usr/lib/postgresql/*/bin, server defaults: fsync on,
as SQLite's synchronous=FULL) is started and removed at exit.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asgi import request  # bench/asgi.py, beside this script
from wrkmix import (  # bench/wrkmix.py
    CONNECTIONS,
    JOBS,
    LISTS,
    ON_CPU_0,
    ON_CPU_1,
    PAGED,
    RATE_LIMIT,
    WARM_UP_SECONDS,
    Figures,
    free_port,
    prepare,
    proc_stat,
    read_figures,
    run_wrk,
    set_affinity,
    start_server,
    stop_server,
    tree_cpu,
)

TARGETS = {"sqlite": 0.60, "pg1": 0.40}
INITDB_OPTIONS = ("-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")


@dataclass(frozen=True)
class Config:
    name: str
    label: str
    store: str  # memory, sqlite, postgresql
    workers: int = 1


CONFIGS = (
    Config("memory", "in-memory", "memory"),
    Config("sqlite", "SQLite", "sqlite"),
    Config("pg1", "PostgreSQL, 1 worker", "postgresql"),
    Config("pg2", "PostgreSQL, 2 workers", "postgresql", workers=2),
)
CONFIGS_BY_NAME: dict[str, Config] = {config.name: config for config in CONFIGS}


@dataclass
class Result(Figures):
    config: Config
    pinning: str
    mock_us: float = 0.0
    db_us: float | None = None
    xacts: float | None = None  # database transactions per request, under the load

    @property
    def total_us(self) -> float:
        return self.mock_us + (self.db_us or 0.0)


# -- PostgreSQL ---------------------------------------------------------------------------------


def pg_binaries() -> Path | None:
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    roots = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    return next((root for root in roots if (root / "initdb").exists()), None)


def as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def quietly(command: list[str]) -> None:
    """Run a PostgreSQL tool as the ``postgres`` user (when root); fail on failure."""
    subprocess.run(as_postgres(command), check=True, capture_output=True, timeout=120)


def start_cluster(stack: contextlib.ExitStack) -> str:
    """Start a throwaway PostgreSQL cluster (stopped and removed when the stack closes)."""
    bin_dir = pg_binaries()
    if bin_dir is None:
        raise SystemExit("no PostgreSQL binaries (initdb): install postgresql or give --pg-url")
    base = Path(tempfile.mkdtemp(prefix="bench-stores-pg-"))
    stack.callback(shutil.rmtree, base, ignore_errors=True)
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
    data, port = base / "data", free_port()
    quietly([str(bin_dir / "initdb"), "-D", str(data), *INITDB_OPTIONS])
    pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(data)]
    stack.callback(
        subprocess.run, as_postgres([*pg_ctl, "-m", "fast", "stop"]), capture_output=True
    )
    options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1"
    quietly([*pg_ctl, "-w", "-l", str(base / "log"), "-o", options, "start"])
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"


def fresh_schema(url: str, stack: contextlib.ExitStack) -> str:
    """A URL whose connections use a new, empty schema (dropped when the stack closes)."""
    import psycopg

    schema = "bench_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')

    def drop() -> None:
        with contextlib.suppress(psycopg.Error), psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')

    stack.callback(drop)
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-csearch_path%3D{schema}"


def inspect_server(url: str) -> tuple[int | None, str]:
    """The PostgreSQL server's main process when it runs on this machine (else None), and its
    version and durability settings."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        facts = "SELECT pg_backend_pid(), current_setting('server_version'),"
        facts += " current_setting('fsync'), current_setting('synchronous_commit')"
        backend, version, fsync, synchronous = conn.execute(facts).fetchone() or (0, "?", "?", "?")
        found = proc_stat(int(backend))
        comm = Path(f"/proc/{found[0]}/comm").read_text().strip() if found else ""
    postmaster = found[0] if found and comm.startswith("postgres") else None
    return postmaster, f"PostgreSQL {version}, fsync={fsync}, synchronous_commit={synchronous}"


@dataclass
class Bench:
    seconds: int
    pg_url: str | None
    pin_db: bool  # the database runs here, started by this script: pin it as the mock
    taskset: bool
    stack: contextlib.ExitStack
    tmp: Path
    postmaster: int | None = None
    database: str = ""


def server_arguments(bench: Bench, config: Config) -> list[str]:
    """The store options of a configuration, on a fresh store."""
    if config.store == "sqlite":
        return ["--state", str(Path(tempfile.mkdtemp(dir=bench.tmp)) / "state.db")]
    if config.store == "postgresql":
        assert bench.pg_url is not None
        url = fresh_schema(bench.pg_url, bench.stack)
        return ["--store", url, "--workers", str(config.workers)]
    return []


def pinning(bench: Bench, config: Config) -> tuple[list[str], list[str], str]:
    """(wrk's taskset prefix, the mock's, a description) for a configuration."""
    if not bench.taskset:
        return [], [], "not pinned (no taskset, or fewer than 2 CPUs)"
    database = config.store == "postgresql"
    if config.workers > 1:
        mock = "mock and database" if database else "mock"
        return ON_CPU_1, [], f"wrk on CPU 1; {mock} unpinned"
    if database and not bench.pin_db:
        return ON_CPU_1, ON_CPU_0, "wrk on CPU 1, mock on CPU 0; database (--pg-url) unpinned"
    mock = "mock and database" if database else "mock"
    return ON_CPU_1, ON_CPU_0, f"wrk on CPU 1, {mock} on CPU 0"


def measure(bench: Bench, config: Config) -> Result:
    """Serve one configuration, load it with the mix, and read the figures and CPU time."""
    pin_wrk, pin_mock, described = pinning(bench, config)
    result = Result(config, described)
    database = bench.postmaster if config.store == "postgresql" else None
    if database is not None and bench.pin_db:
        set_affinity(database, {0} if pin_mock else os.sched_getaffinity(0))
    server = start_server(server_arguments(bench, config), pin_mock)
    try:
        mix_args = prepare(server.base)
        run_wrk(server.base, WARM_UP_SECONDS, mix_args, pin_wrk)
        shared = config.store == "postgresql"
        xacts_before = transactions(bench.pg_url) if shared else 0
        mock_before = tree_cpu(server.process.pid)
        db_before = tree_cpu(database) if database is not None else 0.0
        figures = run_wrk(server.base, bench.seconds, mix_args, pin_wrk)
        mock_cpu = tree_cpu(server.process.pid) - mock_before
        db_cpu = tree_cpu(database) - db_before if database is not None else None
        xacts = transactions(bench.pg_url) - xacts_before if shared else None
    finally:
        stop_server(server)
    read_figures(result, figures)
    per_request = 1e6 / max(result.requests, 1)
    result.mock_us = mock_cpu * per_request
    result.db_us = None if db_cpu is None else db_cpu * per_request
    result.xacts = None if xacts is None else xacts / max(result.requests, 1)
    return result


def transactions(url: str | None) -> int:
    """Transactions the database has run (pg_stat_database; its counters are flushed within a
    second, so this waits that long first). Every statement of the mock's is one."""
    return rolled_back(url)[0]


def rolled_back(url: str | None) -> tuple[int, int]:
    """Transactions the database has run, and those of them rolled back (a write of the mock's
    refused for a conflict is one), as :func:`transactions` reads them."""
    import psycopg

    time.sleep(1.2)
    with psycopg.connect(url, autocommit=True) as conn:
        found = conn.execute(
            "SELECT xact_commit + xact_rollback, xact_rollback FROM pg_stat_database"
            " WHERE datname = current_database()"
        ).fetchone()
    return (int(found[0]), int(found[1])) if found else (0, 0)


# -- PostgreSQL round trips per operation, in-process -------------------------------------------

_counting: ContextVar[bool] = ContextVar("bench_counting", default=False)


class RoundTrips:
    """Counts round trips on one psycopg connection while ``_counting`` is set in the caller's
    context: a statement outside a pipeline is one, a whole (outermost) pipeline is one."""

    def __init__(self) -> None:
        self.statements = 0
        self.pipelines = 0
        self._depth = 0

    @contextlib.contextmanager
    def one(self, conn: Any, kind: str) -> Iterator[None]:
        if self._depth == 0 and conn._pipeline is None and _counting.get():
            if kind == "pipeline":
                self.pipelines += 1
            else:
                self.statements += 1
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def take(self) -> tuple[int, int]:
        counted = self.statements, self.pipelines
        self.statements = self.pipelines = 0
        return counted


def count_round_trips(conn: Any) -> RoundTrips:
    """Make a psycopg connection count its round trips (its class and cursor factory swapped)."""
    trips = RoundTrips()

    class CountingCursor(conn.cursor_factory):  # type: ignore[misc,name-defined]
        def execute(self, *args: Any, **kwargs: Any) -> Any:
            with trips.one(self.connection, "statement"):
                return super().execute(*args, **kwargs)

        def executemany(self, *args: Any, **kwargs: Any) -> Any:
            with trips.one(self.connection, "statement"):
                return super().executemany(*args, **kwargs)

    class CountingConnection(type(conn)):  # type: ignore[misc]
        __slots__ = ()

        @contextlib.contextmanager
        def pipeline(self) -> Iterator[Any]:
            with trips.one(self, "pipeline"), super().pipeline() as pipeline:
                yield pipeline

    conn.__class__ = CountingConnection
    conn.cursor_factory = CountingCursor
    return trips


async def asgi(app: Any, method: str, target: str, body: bytes = b"", key: str = "") -> Any:
    """One request through the ASGI app (no network); the parsed body (asserts 2xx)."""
    path, _, query = target.partition("?")
    headers = [(b"idempotency-key", key.encode())] if key else []
    status, raw = await request(app, method, path, query, body, headers)
    assert 200 <= status < 300, (method, target, status, raw[:300])
    return json.loads(raw)


@dataclass(frozen=True)
class Operation:
    label: str
    method: str
    target: str
    weight: int  # requests of this operation in 20 of the mix (bench/mix.lua)
    body: str = ""


def mix_operations(jobs: list[str], pages: dict[str, str]) -> list[Operation]:
    """Every operation of the mix, with how often it comes in 20 requests."""
    page = "page 2 of "
    return [
        Operation("GET /v1/campaigns?limit=20", "GET", LISTS[0], 2),
        Operation("GET /v1/projects?limit=20", "GET", LISTS[1], 2),
        Operation("GET /v1/jobs?limit=20", "GET", LISTS[2], 1),
        Operation("GET /v1/products?limit=20", "GET", "/v1/products?limit=20", 1),
        *(Operation(page + path, "GET", pages[path], 1) for path in PAGED),
        Operation("POST /v1/products", "POST", "/v1/products", 2, '{"name": "Bench %d"}'),
        Operation("POST /v1/projects", "POST", "/v1/projects", 1, '{"title": "Bench %d"}'),
        Operation("GET /v1/jobs/{id}", "GET", f"/v1/jobs/{jobs[0]}", 5),
        Operation("GET /v1/capabilities", "GET", "/v1/capabilities", 2),
    ]


WARM_UP_CALLS = 3
TRIP_RUNS = 5
Counts = list[tuple[int, int]]  # (statements, pipelines) of each measured request


async def count_operation(
    app: Any, trips: RoundTrips, op: Operation, runs: int, other: Any | None
) -> Counts:
    """(statements, pipelines) of each of ``runs`` requests of an operation, after a warm-up;
    ``other``: another app on the same store, which writes just before each request (as the
    other worker does under load)."""
    counted = []
    for n in range(WARM_UP_CALLS + runs):
        if other is not None:
            await asgi(other, "GET", "/v1/capabilities")  # its rate bucket: a write
        body = (op.body % n).encode() if op.body else b""
        key = uuid.uuid4().hex if op.method == "POST" else ""
        token = _counting.set(n >= WARM_UP_CALLS)
        try:
            await asgi(app, op.method, op.target, body, key)
        finally:
            _counting.reset(token)
        counted.append(trips.take())
    return counted[WARM_UP_CALLS:]


def check_counter(conn: Any, trips: RoundTrips) -> None:
    """The counter counts what it should: a lone statement as one, a pipeline as one."""
    token = _counting.set(True)
    try:
        conn.execute("SELECT 1")
        with conn.cursor() as cursor:
            cursor.executemany("SELECT %s", [(1,), (2,)])
        with conn.pipeline():
            conn.execute("SELECT 1")
            conn.execute("SELECT 2")
    finally:
        _counting.reset(token)
    assert trips.take() == (2, 1), "the round-trip counter miscounts"


async def mix_targets(app: Any) -> tuple[list[str], dict[str, str]]:
    """Jobs made through the control plane and second pages: what the mix reads."""
    for _ in range(JOBS):
        await asgi(app, "POST", "/_mock/events/trigger", b'{"event": "job.completed"}')
    jobs = [job["id"] for job in (await asgi(app, "GET", "/v1/jobs?limit=5"))["jobs"]]
    pages = {}
    for path in PAGED:
        cursor = (await asgi(app, "GET", path))["nextCursor"]
        pages[path] = f"{path}&cursor={urllib.parse.quote(cursor)}"
    return jobs, pages


async def round_trips(url: str, runs: int) -> list[tuple[Operation, Counts, Counts]]:
    """Round trips of each mix operation on a fresh PostgreSQL store, in-process: alone, and
    just after another process wrote (two workers under load)."""
    from mockserver.app import create_app
    from mockserver.settings import Settings

    settings = Settings(clock="manual", store=url, rate_limit=10**8)
    app, other = create_app(settings), create_app(settings)
    try:
        trips = count_round_trips(app.store.dialect.conn)
        check_counter(app.store.dialect.conn, trips)
        # Uncounted (_counting unset, also in the tasks the first requests start).
        jobs, pages = await mix_targets(app)
        await asgi(other, "GET", "/v1/capabilities")
        rows = []
        for op in mix_operations(jobs, pages):
            alone = await count_operation(app, trips, op, runs, None)
            after_other = await count_operation(app, trips, op, runs, other)
            rows.append((op, alone, after_other))
        return rows
    finally:
        for each in (app, other):
            await each.stop_background()
            each.close()


# -- report -------------------------------------------------------------------------------------


def describe(result: Result) -> str:
    db = f", database {result.db_us:.0f}" if result.db_us is not None else ""
    if result.xacts is not None:
        db += f"; {result.xacts:.2f} database transactions (statements) per request"
    line = (
        f"{result.config.label}: {result.rate:.0f} req/s, p50 {result.p50_ms:.1f} ms, "
        f"p99 {result.p99_ms:.1f} ms; CPU per request (µs): mock {result.mock_us:.0f}{db}; "
        f"{result.requests} requests in {result.seconds:.1f} s; {result.pinning}"
    )
    if not result.errors:
        return line + "; all 2xx"
    statuses = ", ".join(f"{s}: {n}" for s, n in sorted(result.statuses.items())) or "none"
    samples = "".join(f"\n    e.g. {sample}" for sample in result.samples)
    return (
        f"{line}\n  ERRORS: {result.non2xx} non-2xx responses ({statuses}), "
        f"{result.socket_errors} socket errors{samples}"
    )


def table(results: list[Result]) -> None:
    print(
        f"\n{'configuration':24} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'mock µs':>8} "
        f"{'db µs':>6} {'total µs':>8} {'non-2xx':>7}  pinning"
    )
    for r in results:
        db = f"{r.db_us:6.0f}" if r.db_us is not None else f"{'-':>6}"
        print(
            f"{r.config.label:24} {r.rate:7.0f} {r.p50_ms:7.1f} {r.p99_ms:7.1f} "
            f"{r.mock_us:8.0f} {db} {r.total_us:8.0f} {r.errors:7d}  {r.pinning}"
        )


RATIOS = {
    "sqlite": "SQLite / in-memory",
    "pg1": "PostgreSQL-1 / in-memory",
    "pg2": "PostgreSQL-2 / in-memory",
}


def ratios(results: list[Result]) -> None:
    """Requests/s of each store over in-memory's, against its target; and the same by CPU."""
    by_name = {r.config.name: r for r in results}
    memory = by_name.get("memory")
    if memory is None or not any(name in by_name for name in RATIOS):
        return
    print("\nrequests/s relative to in-memory (and in-memory's CPU per request over this one's):")
    for name, label in RATIOS.items():
        if name not in by_name:
            continue
        ratio = by_name[name].rate / memory.rate
        target = TARGETS.get(name)
        if target is None:
            verdict = "as measured, no target; mock unpinned"
        else:
            verdict = f"target >= {target:.2f}: {'PASS' if ratio >= target else 'MISS'}"
        if by_name[name].errors or memory.errors:
            verdict += "; WITH ERRORS"
        by_cpu = memory.total_us / max(by_name[name].total_us, 1e-9)
        print(f"  {label:26} {ratio:5.2f}  ({verdict})   by CPU: {by_cpu:4.2f}")


def trips_cell(counts: Counts) -> str:
    """Round trips of an operation's requests: "n (statements + pipelines)", or a range."""
    totals = [s + p for s, p in counts]
    shown = str(totals[0]) if min(totals) == max(totals) else f"{min(totals)}-{max(totals)}"
    return f"{shown} ({', '.join(sorted({f'{s}+{p}' for s, p in counts}))})"


def print_round_trips(rows: list[tuple[Operation, Counts, Counts]], runs: int) -> None:
    print(
        f"\nPostgreSQL round trips per request, counted on the store's connection in-process "
        f"(steady state: {runs} requests of each after {WARM_UP_CALLS} of warm-up; a statement "
        "outside a pipeline = 1, a pipeline = 1; shown: trips (statements+pipelines)); alone, "
        "and just after another process wrote to the store (as with 2 workers):"
    )
    print(f"  {'operation':34} {'per 20':>6}  {'alone':16} after another's write")
    mean = [0.0, 0.0]
    for op, alone, after_other in rows:
        print(f"  {op.label:34} {op.weight:6d}  {trips_cell(alone):16} {trips_cell(after_other)}")
        for i, counts in enumerate((alone, after_other)):
            mean[i] += op.weight * sum(s + p for s, p in counts) / len(counts) / 20
    print(f"  {'mix average per request':34} {'':6}  {mean[0]:<16.2f} {mean[1]:.2f}")


# -- main ---------------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10, help="measured run (default 10)")
    parser.add_argument(
        "--only",
        default="memory,sqlite,pg1,pg2",
        help="configurations, comma-separated (default all)",
    )
    parser.add_argument("--pg-url", help="PostgreSQL server (default: a throwaway cluster)")
    args = parser.parse_args()
    known = {config.name for config in CONFIGS}
    args.only = [name.strip() for name in args.only.split(",") if name.strip()]
    if unknown := set(args.only) - known:
        parser.error(
            f"unknown configuration(s) {', '.join(sorted(unknown))}: use {', '.join(known)}"
        )
    return args


def stop_on_sigterm() -> None:
    """SIGTERM ends the bench as Ctrl-C does (through every cleanup)."""

    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def set_up(args: argparse.Namespace, stack: contextlib.ExitStack) -> Bench:
    tmp = Path(tempfile.mkdtemp(prefix="bench-stores-"))
    stack.callback(shutil.rmtree, tmp, ignore_errors=True)
    taskset = shutil.which("taskset") is not None and {0, 1} <= os.sched_getaffinity(0)
    bench = Bench(args.seconds, args.pg_url, args.pg_url is None, taskset, stack, tmp)
    if any(CONFIGS_BY_NAME[name].store == "postgresql" for name in args.only):
        bench.pg_url = args.pg_url or start_cluster(stack)
        bench.postmaster, bench.database = inspect_server(bench.pg_url)
    return bench


def run(args: argparse.Namespace, stack: contextlib.ExitStack) -> None:
    bench = set_up(args, stack)
    print(
        f"wrk: {CONNECTIONS} connections, 1 thread, bench/mix.lua; {WARM_UP_SECONDS} s warm-up, "
        f"{args.seconds} s measured; mock: --clock manual --rate-limit {RATE_LIMIT}"
    )
    if "sqlite" in args.only:
        print(f"SQLite: a new file under {bench.tmp} (WAL, synchronous=FULL)")
    if bench.pg_url is not None:
        where = "a throwaway cluster" if bench.pin_db else "--pg-url"
        cpu = "its processes' CPU measured" if bench.postmaster else "not local: CPU not measured"
        print(f"PostgreSQL: {where}, {bench.database} ({cpu})")
    results: list[Result] = []
    for config in CONFIGS:
        if config.name in args.only:
            results.append(measure(bench, config))
            print(describe(results[-1]), flush=True)
    table(results)
    ratios(results)
    if bench.pg_url is not None:
        url = fresh_schema(bench.pg_url, stack)
        print_round_trips(asyncio.run(round_trips(url, TRIP_RUNS)), TRIP_RUNS)


def main() -> None:
    args = parse_args()
    stop_on_sigterm()
    with contextlib.ExitStack() as stack:
        try:
            run(args, stack)
        except KeyboardInterrupt:
            print("\ninterrupted; cleaning up", file=sys.stderr)
            raise SystemExit(130) from None


if __name__ == "__main__":
    main()
