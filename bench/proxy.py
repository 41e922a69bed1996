"""What ``conformance proxy`` costs: latency it adds, and its memory over a long run.

    python bench/proxy.py [--seconds 10] [--rounds 3] [--requests 100000]

Each part puts one ``conformance proxy --upstream URL --profile full`` in front of an upstream
(a process of its own, judging everything it forwards, as in use):

1. **Latency added at p50**, at 100 requests a second over 50 concurrent keep-alive
   connections (an open loop: a request starts every 10 ms whatever the answers; httpx,
   asyncio, 50 connections opened first). The upstream is bench/hello.py (uvicorn, a small
   JSON answer to any path), so that what is measured is the proxy, not an upstream at its
   limit. Each round sends ``--seconds`` of requests straight to it, then the same through the
   proxy (GET /v1/capabilities and GET /v1/projects?limit=5 in turn, with a key: judged as
   any exchange is), so both sides see the same machine at the same moment; the p50 of each
   side over all rounds, and the difference. Ceiling: 2 ms. The proxy also measures it on
   its own clock (``addedLatency`` of its JSON report: from a request's arrival to the
   answer's last byte sent, less the upstream's time), printed beside it, here and under the
   memory run's load.
2. **Memory over ``--requests`` requests** through a proxy in front of the mock
   (``mockserver --clock manual --rate-limit 100000000``): wrk (bench/mix.lua: lists, cursor
   pages, creates with fresh Idempotency-Keys, job reads; 32 connections) in runs of a few
   seconds until the count is reached; the proxy's RSS (VmRSS, the forwarding process and its
   judge process together) after the first run and after the last. Its bound, by
   construction: the judge's queues (10,000 exchanges each), the sequence judges' tables
   (10,000 keys, jobs and refusals each; 1,000 cursors of at most 1,000 ids), the findings
   kept (1,000) and the HAR (not asked for here); the bench's ceiling is growth under 64 MiB
   from the first run to the last.

The figures are printed as ratios and against their ceilings, last.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from wrkmix import (  # bench/wrkmix.py
    OWNER,
    free_port,
    prepare,
    process_tree,
    rss_bytes,
    run_wrk,
    start_server,
    stop_server,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RATE = 100  # requests a second
CONNECTIONS = 50
PATHS = ("/v1/capabilities", "/v1/projects?limit=5")
LATENCY_CEILING_MS = 2.0
GROWTH_CEILING = 64 << 20


def start_proxy(upstream: str, report: Path) -> tuple[subprocess.Popen[str], str, list[str]]:
    port = free_port()
    command = [sys.executable, "-m", "conformance", "proxy", "--upstream", upstream]
    command += ["--listen", f"127.0.0.1:{port}", "--profile", "full", "--fail-on", "none"]
    command += ["--report-json", str(report)]
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        output.append(line)
        if "listening on" in line:
            threading.Thread(target=output.extend, args=(process.stdout,), daemon=True).start()
            return process, f"http://127.0.0.1:{port}", output
    raise RuntimeError("the proxy did not start: " + "".join(output))


def start_hello() -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "hello:app", "--app-dir", str(HERE)]
    command += ["--port", str(port), "--log-level", "warning"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            httpx.get(url + "/")
            return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("bench/hello.py did not start")


def stop(process: subprocess.Popen[str]) -> None:
    process.terminate()
    process.wait(timeout=60)


async def paced(base: str, seconds: float) -> list[float]:
    """Latencies (s) of requests started every 1/RATE s for ``seconds`` over CONNECTIONS
    connections (opened first)."""
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    headers = {"Authorization": f"Bearer {OWNER}"}
    async with httpx.AsyncClient(base_url=base, limits=limits, headers=headers) as client:
        await asyncio.gather(*(client.get(PATHS[0]) for _ in range(CONNECTIONS)))
        latencies: list[float] = []

        async def one(path: str) -> None:
            started = time.perf_counter()
            response = await client.get(path)
            latencies.append(time.perf_counter() - started)
            if response.status_code != 200:
                raise RuntimeError(f"{path} answered {response.status_code}")

        tasks = []
        start = time.perf_counter()
        for i in range(int(seconds * RATE)):
            delay = start + i / RATE - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(PATHS[i % len(PATHS)])))
        await asyncio.gather(*tasks)
        return latencies


def latency(mock: str, proxy: str, seconds: float, rounds: int) -> tuple[float, float]:
    direct: list[float] = []
    through: list[float] = []
    for n in range(rounds):
        direct += asyncio.run(paced(mock, seconds))
        through += asyncio.run(paced(proxy, seconds))
        print(f"round {n + 1}: p50 direct {ms(statistics.median(direct))} ms, "
              f"through the proxy {ms(statistics.median(through))} ms", flush=True)  # fmt: skip
    return statistics.median(direct), statistics.median(through)


def memory(proxy_pid: int, proxy: str, requests: int) -> tuple[int, int, int]:
    """(RSS after the first run, RSS after the last, requests sent)."""
    mix = prepare(proxy)
    sent, first = 0, None
    while sent < requests:
        figures = run_wrk(proxy, 5, mix, [])
        sent += int(figures.get("requests", "0"))
        rss = tree_rss(proxy_pid)
        first = rss if first is None else first
        print(f"{sent:>7} requests through the proxy: RSS {rss / 2**20:.1f} MiB", flush=True)
    assert first is not None
    return first, tree_rss(proxy_pid), sent


def tree_rss(pid: int) -> int:
    """RSS of the proxy and its judge process (its child), together."""
    return sum(rss_bytes(p) for p in process_tree(pid))


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="per side and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=100_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench-proxy-"))
    hello, hello_url = start_hello()
    process, proxy, output = start_proxy(hello_url, folder / "latency.json")
    try:
        direct, through = latency(hello_url, proxy, args.seconds, args.rounds)
    finally:
        stop(process)
        stop(hello)
    inside = json.loads((folder / "latency.json").read_text())["addedLatency"]
    server = start_server([], [])
    process, proxy, output = start_proxy(server.base, folder / "memory.json")
    try:
        start, end, sent = memory(process.pid, proxy, args.requests)
    finally:
        stop(process)
        stop_server(server)
    added = through - direct
    under_load = json.loads((folder / "memory.json").read_text())["addedLatency"]
    growth = end - start
    print(f"proxy's own summary: {output[-1].strip() if output else '(none)'}")
    print(f"latency p50 at {RATE} req/s over {CONNECTIONS} connections: direct {ms(direct)} ms, "
          f"through the proxy {ms(through)} ms ({through / direct:.2f}x): added {ms(added)} ms "
          f"of a {LATENCY_CEILING_MS:g} ms ceiling ({added * 1000 / LATENCY_CEILING_MS:.0%}) "
          f"{'OK' if added * 1000 <= LATENCY_CEILING_MS else 'OVER'}")  # fmt: skip
    print(f"added inside the proxy (its own clock, arrival to last byte sent, less the "
          f"upstream's time): p50 {inside.get('p50Ms')} ms, p99 {inside.get('p99Ms')} ms at "
          f"{RATE} req/s; p50 {under_load.get('p50Ms')} ms, p99 {under_load.get('p99Ms')} ms "
          f"under wrk's load, of a {LATENCY_CEILING_MS:g} ms ceiling")  # fmt: skip
    verdict = "OK" if growth <= GROWTH_CEILING else "OVER"
    print(f"memory over {sent} requests: RSS {start / 2**20:.1f} MiB after the first run, "
          f"{end / 2**20:.1f} MiB after the last ({end / start:.2f}x): grew "
          f"{growth / 2**20:.1f} MiB of a {GROWTH_CEILING >> 20} MiB ceiling "
          f"({growth / GROWTH_CEILING:.0%}) {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
