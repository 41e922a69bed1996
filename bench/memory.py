"""Resident memory of the mock: after start, over many reads, and per create.

    python bench/memory.py [--reads 200000] [--creates 5000]

One ``mockserver --clock manual --rate-limit 100000000 --log-level warning`` (in memory), its
RSS read from /proc/PID/status (VmRSS):

1. after start: once it has answered its first ``GET /v1/capabilities``, 0.5 s later (the
   real clock, as by default; ceiling 80 MiB);
2. over ``--reads`` read requests as ``sk_test_acme_owner``, in turn: capabilities, the lists
   of campaigns, projects, jobs and products, their second pages (cursors) and 25 finished
   jobs (made through the control plane first). With wrk: 32 connections, one thread, in runs
   sized to print about ten rows (the first run 2 s); without wrk: 8 client threads on
   keep-alive connections. RSS is printed after each run, from the first row on (the request
   journal, its last 1000 entries, platform/journal.py, is full by then); the growth over the
   second half of the reads (past the allocator's warm-up) is extrapolated to a million reads;
3. over ``--creates`` ``POST /v1/projects`` (a title, a fresh Idempotency-Key each) in five
   batches from 8 client threads: the growth per create of each batch, against the growth per
   create of the state itself, as JSON (``GET /_mock/snapshot``: the project and its kept
   idempotent answer).

With taskset and two CPUs the mock runs on CPU 0 and wrk on CPU 1. The ratios and targets
are printed last.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from http.client import HTTPConnection
from pathlib import Path

from wrkmix import (  # bench/wrkmix.py
    HERE,
    LISTS,
    ON_CPU_0,
    ON_CPU_1,
    OWNER,
    Figures,
    http,
    prepare,
    read_figures,
    rss_bytes,
    run_wrk,
    start_server,
    stop_server,
)

CEILING_MIB = 80.0
FLAT_MIB_PER_MILLION = 2.0  # "flat": less than this per million reads, after the journal fills
ROWS = 10
FIRST_RUN_SECONDS = 2
CLIENT_THREADS = 8
BATCHES = 5
MIB = 1024 * 1024

# wrk script: GET each path given (after the run's prefix, unused) in turn; what it reports
# (non-2xx answers with samples, the MIX lines wrkmix.run_wrk and read_figures read) is
# bench/wrkreport.lua's, as bench/mix.lua's is.
READS_LUA = (
    f'local AUTH = "Bearer {OWNER}"\n'
    + f'dofile("{HERE / "wrkreport.lua"}")\n'
    + r"""
local threads = {}
local paths = {}
local slot = 0

function setup(thread)
  threads[#threads + 1] = thread
end

function init(args)
  for i = 2, #args do
    paths[#paths + 1] = args[i]
  end
end

function request()
  slot = slot % #paths + 1
  return wrk.format("GET", paths[slot], { ["Authorization"] = AUTH }, nil)
end

function done(summary, latency, requests)
  report(threads, summary, latency)
end
"""
)

Request = tuple[str, str, bytes | None, dict[str, str]]


def mib(size: float) -> str:
    return f"{size / MIB:7.1f} MiB"


def drive(base: str, make: Callable[[int], Request], count: int) -> int:
    """Send ``count`` requests (``make(i)`` says which) from CLIENT_THREADS threads on
    keep-alive connections; the number that did not answer 2xx."""
    host = urllib.parse.urlsplit(base)
    numbers = itertools.count()
    failures = []

    def work() -> None:
        connection = HTTPConnection(host.hostname or "", host.port, timeout=60)
        failed = 0
        try:
            while (number := next(numbers)) < count:
                method, path, body, headers = make(number)
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                failed += not 200 <= response.status < 300
        finally:
            connection.close()
            failures.append(failed)

    threads = [threading.Thread(target=work) for _ in range(CLIENT_THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(failures)


def read_paths(base: str) -> list[str]:
    """The reads: capabilities, the lists, their second pages, 25 finished jobs."""
    jobs, *pages = prepare(base)
    return ["/v1/capabilities", *LISTS, *pages, *(f"/v1/jobs/{job}" for job in jobs.split(","))]


def snapshot_size(base: str) -> int:
    """Bytes of the whole state as compact JSON."""
    return len(json.dumps(http(base, "GET", "/_mock/snapshot"), separators=(",", ":")))


def reads(base: str, pid: int, total: int, pin: list[str]) -> list[tuple[int, int]]:
    """Run the reads, printing RSS as they go; the rows (reads so far, RSS)."""
    paths = read_paths(base)
    print(f"\nreads ({len(paths)} paths in turn):\n{'reads so far':>14} {'RSS':>11} {'change':>11}")
    done = errors = 0
    rows: list[tuple[int, int]] = []
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as directory:
        script = Path(directory) / "reads.lua"
        script.write_text(READS_LUA)
        seconds, rate = FIRST_RUN_SECONDS, 0.0
        while done < total:
            if shutil.which("wrk") is not None:
                result = Figures()
                read_figures(result, run_wrk(base, seconds, paths, pin, script=script))
                done, errors = done + result.requests, errors + result.errors
                rate = result.rate
                seconds = max(1, round(total / ROWS / max(rate, 1.0)))
            else:
                count = max(1000, total // ROWS)

                def make(number: int, offset: int = done) -> Request:
                    path = paths[(offset + number) % len(paths)]
                    return "GET", path, None, {"Authorization": f"Bearer {OWNER}"}

                errors += drive(base, make, count)
                done += count
            rows.append((done, rss_bytes(pid)))
            print(f"{done:14d} {mib(rows[-1][1])} {mib(rows[-1][1] - rows[0][1])}", flush=True)
    if errors:
        print(f"  {errors} reads did not answer 2xx: the figures above do not count")
    return rows


def creates(base: str, pid: int, total: int) -> tuple[float, float]:
    """Create projects in batches, printing growth per create; (RSS growth per create, state
    growth per create as JSON)."""
    prefix = uuid.uuid4().hex[:12]
    batch = max(1, total // BATCHES)
    state_before = snapshot_size(base)
    rss_before = rss = rss_bytes(pid)
    print(f"\ncreates (POST /v1/projects):\n{'creates':>14} {'RSS':>11} {'per create':>11}")
    made = errors = 0
    while made < total:
        count = min(batch, total - made)

        def make(number: int, offset: int = made) -> Request:
            body = json.dumps({"title": f"Memory bench project {offset + number}"}).encode()
            headers = {
                "Authorization": f"Bearer {OWNER}",
                "Content-Type": "application/json",
                "Idempotency-Key": f"{prefix}-{offset + number}",
            }
            return "POST", "/v1/projects", body, headers

        errors += drive(base, make, count)
        made += count
        previous, rss = rss, rss_bytes(pid)
        print(f"{made:14d} {mib(rss)} {(rss - previous) / count:9.0f} B", flush=True)
    state_after = snapshot_size(base)
    if errors:
        print(f"  {errors} creates did not answer 2xx: the figures above do not count")
    return (rss - rss_before) / made, (state_after - state_before) / made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=200_000, help="default 200000")
    parser.add_argument("--creates", type=int, default=5000, help="default 5000")
    args = parser.parse_args()
    pinned = shutil.which("taskset") is not None and {0, 1} <= os.sched_getaffinity(0)
    pin_server, pin_wrk = (ON_CPU_0, ON_CPU_1) if pinned else ([], [])
    client = "wrk, 32 connections" if shutil.which("wrk") else f"{CLIENT_THREADS} threads"
    where = "mock on CPU 0, wrk on CPU 1" if pinned else "not pinned"
    print(f"mockserver in memory; reads by {client}; {where}")
    server = start_server(["--clock", "real"], pin_server)  # the default clock
    try:
        http(server.base, "GET", "/v1/capabilities")
        time.sleep(0.5)
        started = rss_bytes(server.process.pid)
    finally:
        stop_server(server)
    print(f"\nRSS after start (real clock, first answer given): {mib(started).strip()}")
    server = start_server([], pin_server)  # the manual clock: nothing moves but the requests
    try:
        pid = server.process.pid
        print(f"RSS once listening (manual clock, no request yet): {mib(rss_bytes(pid)).strip()}")
        rows = reads(server.base, pid, args.reads, pin_wrk)
        per_create, state_per_create = creates(server.base, pid, args.creates)
    finally:
        stop_server(server)

    half = next(row for row in rows if row[0] >= rows[-1][0] / 2)
    counted, growth = rows[-1][0] - half[0], rows[-1][1] - half[1]
    per_million = growth / max(counted, 1) * 1_000_000
    print("\ntargets:")
    verdict = "PASS" if started / MIB <= CEILING_MIB else "MISS"
    print(
        f"  RSS after start / ceiling: {started / MIB:.1f} / {CEILING_MIB:.0f} MiB = "
        f"{started / MIB / CEILING_MIB:.2f}  (target <= 1.00: {verdict})"
    )
    verdict = "PASS" if per_million / MIB < FLAT_MIB_PER_MILLION else "MISS"
    print(
        f"  reads: {(rows[-1][1] - rows[0][1]) / MIB:+.1f} MiB from the first row to the last; "
        f"{growth / MIB:+.1f} MiB over the last {counted} reads, {per_million / MIB:+.1f} MiB "
        f"per million (flat: < {FLAT_MIB_PER_MILLION:.0f}: {verdict})"
    )
    print(
        f"  creates: {per_create:.0f} B of RSS per create; the state it keeps grows "
        f"{state_per_create:.0f} B of JSON per create (RSS / state = "
        f"{per_create / max(state_per_create, 1):.1f})"
    )


if __name__ == "__main__":
    main()
