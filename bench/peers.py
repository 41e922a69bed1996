"""The mock against its peers on the standard mix: Prism on the same contract, and a ceiling.

    python bench/peers.py [--seconds 10] [--only mock,prism,ceiling]

Three servers, one after another, each alone on CPU 0 while wrk (32 connections, one thread,
bench/mix.lua: per 20 requests 6 lists, 4 cursor pages, 3 creates with a body and an
Idempotency-Key, 5 job reads, 2 capabilities reads) runs on CPU 1 for a 2 s warm-up and then
the measured ``--seconds``:

- mock: ``mockserver --clock manual --rate-limit 100000000 --log-level warning``, given 25
  finished jobs and second-page cursors (control plane) before wrk;
- prism: ``npx @stoplight/prism-cli@5 mock spec/openapi.yaml`` (Node.js; npx fetches Prism
  once), sent the same requests (its answers are the contract's examples; the job ids and
  cursors are the mock's);
- ceiling: a Starlette hello world (bench/hello.py) on the mock's server stack (uvicorn with
  uvloop and httptools, the access log off as the mock's): the most any Starlette app serves
  on this machine.

Printed per server: requests/s, p50/p99 latency (wrk), non-2xx answers, and server CPU per
request (µs, utime+stime of the server's process tree from /proc). Then, last, the ratios of
the mock's requests/s to Prism's (target >= 4.5) and to the ceiling's (target >= 0.7), and the
mock's p99 against its target (< 15 ms). Without Node.js (npx) Prism is skipped, saying so;
without taskset or two CPUs nothing is pinned, saying so.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from wrkmix import (  # bench/wrkmix.py
    CONNECTIONS,
    ON_CPU_0,
    ON_CPU_1,
    WARM_UP_SECONDS,
    Figures,
    free_port,
    prepare,
    read_figures,
    run_wrk,
    start_server,
    stop_server,
    tree_cpu,
)

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "openapi.yaml"
PRISM = "@stoplight/prism-cli@5"
TARGETS = {"prism": 4.5, "ceiling": 0.7}
P99_TARGET_MS = 15.0
START_TIMEOUT = 180  # npx may first fetch Prism


@dataclass
class Result(Figures):
    name: str
    label: str
    cpu_us: float = 0.0


@dataclass
class Process:
    popen: subprocess.Popen[bytes]
    base: str


def wait_port(popen: subprocess.Popen[bytes], port: int, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if popen.poll() is not None:
            raise RuntimeError(f"{what} exited with {popen.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} within {START_TIMEOUT} s")


def start_process(command: list[str], port: int, what: str) -> Process:
    popen = subprocess.Popen(
        command,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group (npx starts node under it)
    )
    try:
        wait_port(popen, port, what)
    except BaseException:
        stop_process(popen)
        raise
    return Process(popen, f"http://127.0.0.1:{port}")


def stop_process(popen: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(popen.pid, 15)
    try:
        popen.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, 9)
        popen.wait()


def load(result: Result, base: str, root_pid: int, mix_args: list[str], pin: list[str]) -> None:
    """Warm up, then the measured run: wrk's figures and the server tree's CPU per request."""
    run_wrk(base, WARM_UP_SECONDS, mix_args, pin)
    before = tree_cpu(root_pid)
    figures = run_wrk(base, result_seconds(), mix_args, pin)
    cpu = tree_cpu(root_pid) - before
    read_figures(result, figures)
    result.cpu_us = cpu * 1e6 / max(result.requests, 1)


_seconds = 10


def result_seconds() -> int:
    return _seconds


def measure_mock(pin_server: list[str], pin_wrk: list[str]) -> tuple[Result, list[str]]:
    result = Result(name="mock", label="mock (in-memory)")
    server = start_server([], pin_server)
    try:
        mix_args = prepare(server.base)
        load(result, server.base, server.process.pid, mix_args, pin_wrk)
    finally:
        stop_server(server)
    return result, mix_args


def measure_prism(pin_server: list[str], pin_wrk: list[str], mix_args: list[str]) -> Result:
    result = Result(name="prism", label="Prism 5 (same contract)")
    port = free_port()
    command = [*pin_server, "npx", "-y", PRISM, "mock", "-h", "127.0.0.1", "-p", str(port)]
    process = start_process([*command, str(SPEC)], port, "Prism")
    try:
        load(result, process.base, process.popen.pid, mix_args, pin_wrk)
    finally:
        stop_process(process.popen)
    return result


def measure_ceiling(pin_server: list[str], pin_wrk: list[str], mix_args: list[str]) -> Result:
    result = Result(name="ceiling", label="ceiling (Starlette hello world)")
    port = free_port()
    command = [*pin_server, sys.executable, "-m", "uvicorn", "hello:app"]
    command += ["--app-dir", str(Path(__file__).parent), "--port", str(port)]
    command += ["--log-level", "warning", "--no-access-log"]
    process = start_process(command, port, "the hello world")
    try:
        load(result, process.base, process.popen.pid, mix_args, pin_wrk)
    finally:
        stop_process(process.popen)
    return result


def describe(result: Result) -> str:
    line = (
        f"{result.label:32} {result.rate:7.0f} {result.p50_ms:7.1f} {result.p99_ms:7.1f} "
        f"{result.cpu_us:7.0f} {result.errors:8d}"
    )
    if result.errors:
        statuses = ", ".join(f"{s}: {n}" for s, n in sorted(result.statuses.items()))
        line += f"  ({statuses}; socket errors {result.socket_errors})"
    return line


def verdicts(results: dict[str, Result]) -> None:
    mock = results.get("mock")
    if mock is None:
        return
    print("\nthe mock's requests/s relative to each (and by CPU per request):")
    for name, target in TARGETS.items():
        other = results.get(name)
        if other is None:
            continue
        ratio = mock.rate / other.rate
        by_cpu = other.cpu_us / max(mock.cpu_us, 1e-9)
        verdict = "PASS" if ratio >= target else "MISS"
        note = "; Prism answered non-2xx (see above)" if name == "prism" and other.errors else ""
        print(f"  mock / {name:8} {ratio:5.2f}  (target >= {target}: {verdict}{note})", end="")
        print(f"   by CPU: {by_cpu:4.2f}")
    verdict = "PASS" if mock.p99_ms < P99_TARGET_MS else "MISS"
    print(f"  mock p99       {mock.p99_ms:5.1f} ms (target < {P99_TARGET_MS:.0f} ms: {verdict})")
    if mock.errors:
        print("  the mock answered non-2xx: the figures above do not count")


def main() -> None:
    global _seconds
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=10, help="measured run (default 10)")
    parser.add_argument("--only", default="mock,prism,ceiling", help="comma-separated")
    args = parser.parse_args()
    _seconds = args.seconds
    only = {name.strip() for name in args.only.split(",")}
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is needed: apt-get install wrk")
    pinned = shutil.which("taskset") is not None and {0, 1} <= os.sched_getaffinity(0)
    pin_server, pin_wrk = (ON_CPU_0, ON_CPU_1) if pinned else ([], [])
    print(
        f"wrk: {CONNECTIONS} connections, 1 thread, bench/mix.lua; {WARM_UP_SECONDS} s warm-up, "
        f"{args.seconds} s measured; "
        + ("server on CPU 0, wrk on CPU 1" if pinned else "NOT pinned (no taskset or < 2 CPUs)")
    )
    print(f"\n{'server':32} {'req/s':>7} {'p50 ms':>7} {'p99 ms':>7} {'CPU µs':>7} {'non-2xx':>8}")
    results: dict[str, Result] = {}
    # The mock runs first even when not asked for: it makes the jobs and cursors of the mix.
    mock, mix_args = measure_mock(pin_server, pin_wrk)
    if "mock" in only:
        results["mock"] = mock
        print(describe(mock), flush=True)
    if "prism" in only:
        if shutil.which("npx") is None:
            print(f"{'Prism 5':32} skipped: no npx (install Node.js to compare with Prism)")
        else:
            results["prism"] = measure_prism(pin_server, pin_wrk, mix_args)
            print(describe(results["prism"]), flush=True)
    if "ceiling" in only:
        results["ceiling"] = measure_ceiling(pin_server, pin_wrk, mix_args)
        print(describe(results["ceiling"]), flush=True)
    verdicts(results)


if __name__ == "__main__":
    main()
