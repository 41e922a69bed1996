"""Per-request cost of the mock, measured through its ASGI app (no network), and start-up cost.

    python bench/mock_latency.py [--requests N]

Prints start-up time, resident memory, and per-operation latency percentiles. The ASGI calls
are made directly (no HTTP client), so the figures are the mock's own work: routing, auth,
rate limit, validation, handler, serialisation.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time

from asgi import request  # bench/asgi.py, beside this script

from mockserver.app import create_app
from mockserver.settings import Settings


async def call(app, method: str, path: str, query: str = "", body: bytes = b"", headers=()) -> int:
    status, _ = await request(app, method, path, query, body, headers)
    return status


def percentile(ordered: list[float], q: float) -> float:
    """The q-quantile of sorted samples, in microseconds."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e6


async def measure(app, requests: int) -> None:
    channel = "/v1/channels/chn_money_minute"
    valid_patch = json.dumps({"niche": "money", "products": ["prd_budget_planner"]}).encode()
    invalid_patch = json.dumps({"niche": 5, "x": 1}).encode()
    cases = [
        ("GET /v1/openapi.json (public)", "GET", "/v1/openapi.json", "", b""),
        ("GET /v1/campaigns?limit=50", "GET", "/v1/campaigns", "limit=50", b""),
        ("GET /v1/campaigns?limit=1", "GET", "/v1/campaigns", "limit=1", b""),
        ("GET /v1/capabilities", "GET", "/v1/capabilities", "", b""),
        ("PATCH /v1/channels/{id} (valid)", "PATCH", channel, "", valid_patch),
        ("PATCH /v1/channels/{id} (invalid, 400)", "PATCH", channel, "", invalid_patch),
        ("POST /v1/products (create)", "POST", "/v1/products", "", b'{"name": "Bench"}'),
    ]
    print(f"{'operation':44} {'p50 us':>8} {'p95 us':>8} {'p99 us':>8} {'req/s':>8}")
    for label, method, path, query, body in cases:
        app.runtime.rate.limit = 10**9  # measure the work, not the limiter's refusals
        samples = []
        for _ in range(requests):
            started = time.perf_counter()
            status = await call(app, method, path, query, body)
            samples.append(time.perf_counter() - started)
            assert status < 500, status
        samples.sort()
        p50, p95, p99 = (percentile(samples, q) for q in (0.5, 0.95, 0.99))
        rate = len(samples) / sum(samples)
        print(f"{label:44} {p50:8.0f} {p95:8.0f} {p99:8.0f} {rate:8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    started = time.perf_counter()
    app = create_app(Settings(clock="manual", seed=1))
    startup_ms = (time.perf_counter() - started) * 1000
    print(f"start-up (contract, validators, fixtures): {startup_ms:.0f} ms")
    asyncio.run(measure(app, args.requests))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {rss:.0f} MiB")


if __name__ == "__main__":
    main()
