"""Start-up time of the mock: from spawning ``mockserver`` to its first answer.

    python bench/startup.py [--runs 5]

Each run spawns ``python -m mockserver --port P --log-level warning`` (the real command line,
on a free port) and polls ``GET /v1/capabilities`` as the fixtures' ``sk_test_acme_owner``
tightly (a new attempt 1 ms after a refused connection; the mock binds its port before it
builds itself, so a connection made early waits for the answer) until a 200 answers; the wall
time from just before the spawn to that answer is the run's figure. Printed, each as median,
min and max over ``--runs``, with the median CPU seconds (user + system, /proc/PID/stat, in
10 ms ticks) the process had used when it answered, a figure other work on the machine
disturbs less than wall time:

- the interpreter's floor: ``python -c pass``, the same interpreter, in the same run;
- the mock as this environment runs it (with ``PYTHONDONTWRITEBYTECODE`` set, as here, its
  modules are compiled from source at every start);
- the mock with its modules' bytecode cached (``PYTHONPYCACHEPREFIX``, a new directory filled
  by one start first), as an installed wheel runs;
- the first start after the contract or fixtures change (an empty YAML cache,
  ``MOCKSERVER_CACHE_DIR`` a new directory each run; mockserver/platform/yamlload.py).

Last, the median of the mock as this environment runs it against the 0.5 s ceiling.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from wrkmix import CLK_TCK, OWNER, Server, free_port, proc_stat, stop_server  # bench/wrkmix.py

ROOT = Path(__file__).resolve().parent.parent
CEILING_SECONDS = 0.5
TIMEOUT_SECONDS = 60.0
PATH = "/v1/capabilities"


def first_answer(port: int, process: subprocess.Popen[str], deadline: float) -> None:
    """Return once ``GET /v1/capabilities`` answers 200 (raises if the mock dies or refuses)."""
    while time.perf_counter() < deadline:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT_SECONDS)
        try:
            connection.request("GET", PATH, headers={"Authorization": f"Bearer {OWNER}"})
            response = connection.getresponse()
            response.read()
        except ConnectionError:  # not bound yet (refused) or closed: try again
            if process.poll() is not None:
                raise RuntimeError(f"mockserver exited with {process.returncode}") from None
            time.sleep(0.001)
            continue
        finally:
            connection.close()
        if response.status != 200:
            raise RuntimeError(f"GET {PATH} answered {response.status}")
        return
    raise RuntimeError(f"no answer within {TIMEOUT_SECONDS:.0f} s")


def start_once(env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawning the mock to its first 200, and the CPU seconds the mock had used
    by then (the mock is stopped after)."""
    port = free_port()
    command = [sys.executable, "-m", "mockserver", "--port", str(port), "--log-level", "warning"]
    started = time.perf_counter()
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: stopped by stop_server
    )
    server = Server(process, "", [])
    try:
        first_answer(port, process, started + TIMEOUT_SECONDS)
        elapsed = time.perf_counter() - started
        stat = proc_stat(process.pid)
        cpu = stat[1] / CLK_TCK if stat is not None else float("nan")
    except BaseException:
        stop_server(server)
        print((process.stdout.read() if process.stdout else "")[-2000:], file=sys.stderr)
        raise
    stop_server(server)
    return elapsed, cpu


def interpreter_floor() -> tuple[float, float]:
    started, before = time.perf_counter(), os.times()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    after = os.times()
    cpu = after.children_user - before.children_user
    cpu += after.children_system - before.children_system
    return time.perf_counter() - started, cpu


def environment(**changes: str | None) -> dict[str, str]:
    env = dict(os.environ)
    for name, value in changes.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def measure(runs: int, label: str, once: Callable[[], tuple[float, float]]) -> list[float]:
    """``runs`` runs of ``once``: a row of the wall times and the median CPU; the wall times."""
    samples = [once() for _ in range(runs)]
    walls = [wall for wall, _ in samples]
    cpu = statistics.median(cpu for _, cpu in samples)
    print(
        f"{label:52} {statistics.median(walls):6.3f} {min(walls):6.3f} {max(walls):6.3f}"
        f"   {cpu:6.2f}",
        flush=True,
    )
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="starts per variant (default 5)")
    args = parser.parse_args()
    as_here = "set" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "not set"
    print(f"{sys.executable}; PYTHONDONTWRITEBYTECODE {as_here}; {args.runs} runs each\n")
    header = "seconds from spawn to the first answer"
    print(f"{header:52} {'median':>6} {'min':>6} {'max':>6}   {'CPU':>6}")
    measure(args.runs, "interpreter floor (python -c pass)", interpreter_floor)
    env = environment()
    start_once(env)  # a warm-up: the YAML cache filled, the files in the page cache
    here = measure(args.runs, "mockserver, as this environment runs it", lambda: start_once(env))
    with tempfile.TemporaryDirectory(prefix="bench-pycache-") as prefix:
        compiled = environment(PYTHONDONTWRITEBYTECODE=None, PYTHONPYCACHEPREFIX=prefix)
        start_once(compiled)  # fills the bytecode cache
        label = "mockserver, bytecode cached (as installed)"
        measure(args.runs, label, lambda: start_once(compiled))

    def cold_yaml() -> float:
        with tempfile.TemporaryDirectory(prefix="bench-yaml-") as directory:
            return start_once(environment(MOCKSERVER_CACHE_DIR=directory))

    measure(args.runs, "mockserver, YAML cache empty (after a spec change)", cold_yaml)
    median = statistics.median(here)
    verdict = "PASS" if median <= CEILING_SECONDS else "MISS"
    print(
        f"\nstart-up (as this environment runs it) / ceiling: {median:.3f} s / "
        f"{CEILING_SECONDS} s = {median / CEILING_SECONDS:.2f}  (target <= 1.00: {verdict})"
    )


if __name__ == "__main__":
    main()
