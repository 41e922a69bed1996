"""The conformance suite's own CPU per request, against the bundled mock.

    python bench/suite.py [--workers 1,2] [--seed 1] [--repeat 1]

For each worker count N: ``python -m conformance run --mock --allow-spend --seed 1 --workers N
--no-progress --report-json FILE``, as the command line runs it (a new process: imports, the
contract, the mock's start and stop, the report all count). The mock is a subprocess of the
suite (conformance/mockprocess.py); its CPU is not the suite's and is taken out:

- the whole run's CPU (user + sys): the suite's process with every process it waited for (the
  mock, the workers), from ``wait4`` on the suite's process;
- the mock's CPU: utime + stime of the ``mockserver`` process from /proc, read every 20 ms
  until it ends (its last reading is taken out; what it spends after that, stopping, is
  counted as the suite's: the figure errs high, by a few ms at most);
- the requests: the report's ``requests`` (the requests the checks sent to the API, the
  control-plane calls to ``/_mock/`` not counted, though the suite's CPU for them is).

Printed per run: the verdict, requests, wall seconds, the suite's and the mock's CPU seconds,
and the suite's CPU per request in ms. Last, the ratio of each to the ceiling of 3 ms of the
suite's CPU per request (issue 13: <= 1.0 meets it).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from wrkmix import CLK_TCK, proc_stat  # bench/wrkmix.py

ROOT = Path(__file__).resolve().parent.parent
CEILING_MS = 3.0
POLL_SECONDS = 0.02


@dataclass
class Result:
    workers: int
    verdict: str = ""
    requests: int = 0
    wall: float = 0.0
    total_cpu: float = 0.0  # the suite's process and every process it waited for
    mock_cpu: float = 0.0

    @property
    def suite_cpu(self) -> float:
        return self.total_cpu - self.mock_cpu

    @property
    def ms_per_request(self) -> float:
        return self.suite_cpu * 1000 / max(self.requests, 1)


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def children(pid: int) -> list[int]:
    """The live children of a process (a scan of /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := proc_stat(int(entry.name))) and stat[0] == pid:
            found.append(int(entry.name))
    return found


class MockWatch:
    """Finds the suite's ``mockserver`` child and keeps its last CPU reading (seconds)."""

    def __init__(self, suite_pid: int) -> None:
        self.suite_pid = suite_pid
        self.mock_pid: int | None = None
        self.cpu = 0.0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True, name="mock-watch")

    def _watch(self) -> None:
        while not self.done.is_set():
            if self.mock_pid is None:
                for pid in children(self.suite_pid):
                    if "mockserver" in cmdline(pid):
                        self.mock_pid = pid
            stat = proc_stat(self.mock_pid) if self.mock_pid is not None else None
            if stat is not None and stat[0] == self.suite_pid:  # the mock, not a reused pid
                self.cpu = stat[1] / CLK_TCK
            self.done.wait(POLL_SECONDS)

    def __enter__(self) -> MockWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


def measure(workers: int, seed: int, tmp: Path) -> Result:
    report = tmp / f"report-{workers}.json"
    output = tmp / f"output-{workers}.txt"
    command = [sys.executable, "-m", "conformance", "run", "--mock", "--allow-spend"]
    command += ["--seed", str(seed), "--workers", str(workers), "--no-progress"]
    command += ["--report-json", str(report)]
    result = Result(workers)
    with output.open("w") as out:
        started = time.monotonic()
        process = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        with MockWatch(process.pid) as watch:
            _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        result.wall = time.monotonic() - started
    if watch.mock_pid is None:
        raise RuntimeError(f"no mockserver process was seen:\n{output.read_text()[-3000:]}")
    if not report.exists():
        raise RuntimeError(f"the run wrote no report:\n{output.read_text()[-3000:]}")
    written = json.loads(report.read_text())
    result.verdict = str(written["verdict"])
    result.requests = int(written["requests"])
    result.total_cpu = usage.ru_utime + usage.ru_stime
    result.mock_cpu = watch.cpu
    return result


def describe(result: Result) -> str:
    return (
        f"{result.workers:7d} {result.verdict:>8} {result.requests:8d} {result.wall:7.1f} "
        f"{result.suite_cpu:9.2f} {result.mock_cpu:8.2f} {result.ms_per_request:8.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated")
    parser.add_argument("--seed", type=int, default=1, help="the run's --seed (default 1)")
    parser.add_argument("--repeat", type=int, default=1, help="runs of each (the best is kept)")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",") if n.strip()]
    print(
        f"conformance run --mock --allow-spend --seed {args.seed} --workers N; "
        f"{os.cpu_count()} CPUs, best of {args.repeat}"
    )
    print(
        f"\n{'workers':>7} {'verdict':>8} {'requests':>8} {'wall s':>7} "
        f"{'suite CPU':>9} {'mock CPU':>8} {'ms/req':>8}"
    )
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        for workers in counts:
            runs = [measure(workers, args.seed, Path(tmp)) for _ in range(args.repeat)]
            best = min(runs, key=lambda r: r.ms_per_request)
            results.append(best)
            print(describe(best), flush=True)
    print(f"\nthe suite's CPU per request against the ceiling ({CEILING_MS:g} ms):")
    for result in results:
        ratio = result.ms_per_request / CEILING_MS
        verdict = "PASS" if ratio <= 1.0 else "MISS"
        note = "" if result.verdict == "passed" else f"; the run {result.verdict}: see above"
        print(
            f"  --workers {result.workers}  {result.ms_per_request:5.2f} ms  "
            f"ratio {ratio:4.2f} (target <= 1.0: {verdict}{note})"
        )


if __name__ == "__main__":
    main()
