"""What the wrk benchmarks share: processes under test, their CPU time, and the standard mix.

bench/stores.py and bench/peers.py start a server pinned to one CPU, load it with wrk running
bench/mix.lua pinned to the other, and read wrk's figures and the server's CPU time from /proc.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MIX = HERE / "mix.lua"
OWNER = "sk_test_acme_owner"
RATE_LIMIT = "100000000"
SERVER_OPTIONS = f"--port 0 --clock manual --rate-limit {RATE_LIMIT} --log-level warning".split()
ON_CPU_0, ON_CPU_1 = ["taskset", "-c", "0"], ["taskset", "-c", "1"]
CONNECTIONS = 32
WARM_UP_SECONDS = 2
JOBS = 25
LISTS = ("/v1/campaigns?limit=20", "/v1/projects?limit=20", "/v1/jobs?limit=20")
PAGED = (*LISTS, "/v1/products?limit=5")  # the second pages the mix reads
CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- CPU time from /proc ------------------------------------------------------------------------


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, utime + stime + cutime + cstime in clock ticks) of a process, or None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # from field 3 (state) on
    return int(fields[1]), sum(int(value) for value in fields[11:15])


def process_tree(root: int) -> dict[int, int]:
    """A process and all its descendants: {pid: CPU ticks, reaped children's included}."""
    stats = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (found := proc_stat(int(entry.name))) is not None:
            stats[int(entry.name)] = found
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in stats.items():
        children.setdefault(parent, []).append(pid)
    tree, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            tree[pid] = stats[pid][1]
            todo.extend(children.get(pid, ()))
    return tree


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of a process and all its descendants, the reaped included."""
    return sum(process_tree(root).values()) / CLK_TCK


def set_affinity(root: int, cpus: set[int]) -> None:
    """Put a process tree (a PostgreSQL server: new backends inherit it) on these CPUs."""
    for pid in process_tree(root):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(pid, cpus)


def rss_bytes(pid: int) -> int:
    """A process's resident set size (``VmRSS`` of /proc/PID/status), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the mock under wrk -------------------------------------------------------------------------


@dataclass
class Server:
    process: subprocess.Popen[str]
    base: str
    output: list[str]


def start_server(arguments: list[str], pin: list[str]) -> Server:
    """Start ``mockserver`` on a free port; answers once it listens."""
    command = [*pin, sys.executable, "-m", "mockserver", *SERVER_OPTIONS, *arguments]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: stopped with its workers, by us
    )
    server = Server(process, "", [])
    try:
        server.base = wait_listening(server)
    except BaseException:
        stop_server(server)
        raise
    return server


def wait_listening(server: Server) -> str:
    """The mock's base URL once it says it listens; its output is drained from then on."""
    stdout = server.process.stdout
    assert stdout is not None
    for line in stdout:
        server.output.append(line)
        if line.startswith("mockserver listening on "):
            threading.Thread(target=server.output.extend, args=(stdout,), daemon=True).start()
            return line.split()[-1]
    server.process.wait()
    raise RuntimeError(f"mockserver did not start: {''.join(server.output)[-2000:]}")


def stop_server(server: Server) -> None:
    """Stop the mock and its workers (SIGTERM to its process group, SIGKILL if it lingers)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(server.process.pid, signal.SIGTERM)
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait()


def http(base: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One request to the running mock as the acme owner; the parsed body (asserts 2xx)."""
    headers = {"Authorization": f"Bearer {OWNER}", "Content-Type": "application/json"}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def second_page(base: str, path: str) -> str:
    """The path of a list's second page (with a cursor the mock gave)."""
    cursor = http(base, "GET", path)["nextCursor"]
    if not cursor:
        raise RuntimeError(f"{path} has no second page")
    page = f"{path}&cursor={urllib.parse.quote(cursor)}"
    http(base, "GET", page)
    return page


def prepare(base: str) -> list[str]:
    """Make the jobs the mix reads; the wrk script's arguments (job ids, second pages)."""
    for _ in range(JOBS):
        http(base, "POST", "/_mock/events/trigger", {"event": "job.completed"})
    jobs = [job["id"] for job in http(base, "GET", "/v1/jobs?limit=5")["jobs"]]
    return [",".join(jobs), *(second_page(base, path) for path in PAGED)]


def run_wrk(
    base: str, seconds: int, mix_args: list[str], pin: list[str], script: Path = MIX
) -> dict[str, str]:
    """One wrk run of the mix (or of another ``script`` that takes the same arguments and
    prints the same way); the ``MIX key=value`` figures its done() printed (samples joined by
    newlines)."""
    prefix = uuid.uuid4().hex[:12]  # fresh Idempotency-Keys for every run
    load = [*f"-c {CONNECTIONS} -t 1 -d {seconds}s".split(), "-s", str(script)]
    command = [*pin, "wrk", *load, base, "--", prefix, *mix_args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 120)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}): {done.stderr or done.stdout}")
    figures: dict[str, str] = {}
    for line in done.stdout.splitlines():
        if line.startswith("MIX "):
            key, _, value = line[4:].partition("=")
            figures[key] = f"{figures[key]}\n{value}" if key in figures else value
    return figures


@dataclass(kw_only=True)
class Figures:
    """What wrk's run of the mix measured (mix.lua's done() prints them)."""

    requests: int = 0
    seconds: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    non2xx: int = 0
    socket_errors: int = 0
    statuses: dict[int, int] = field(default_factory=dict)
    samples: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def errors(self) -> int:
        return self.non2xx + self.socket_errors


def read_figures(result: Figures, figures: dict[str, str]) -> None:
    """Set a result's wrk figures from what run_wrk read."""
    result.requests = int(figures["requests"])
    result.seconds = int(figures["duration_us"]) / 1e6
    result.p50_ms = int(figures["p50_us"]) / 1000
    result.p99_ms = int(figures["p99_us"]) / 1000
    result.non2xx = int(figures["non2xx"])
    result.socket_errors = int(figures["socket_errors"])
    result.statuses = {int(k[7:]): int(v) for k, v in figures.items() if k.startswith("status_")}
    result.samples = figures["sample"].splitlines() if "sample" in figures else []
