"""Cost of cursor paging deep into a large collection, measured through the mock's ASGI app.

    python bench/paging.py [--records N] [--repeat N]

Fills one workspace's ``jobs`` and ``projects`` with N records each (directly through the World,
in one transaction: set-up only), then prints, per list and page size, the median time of the
first page and of a full page deep in (the last but one, reached with a real cursor by walking
the list), their ratio (keyset paging: about 1), and the time of a whole walk at a third, two
thirds and all of N records (per record: about constant). The ASGI calls are made directly (no
HTTP client).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

from asgi import request  # bench/asgi.py, beside this script

from mockserver.app import create_app
from mockserver.settings import Settings

WORKSPACE = "ws_acme"
CREATED = "2026-09-01T09:00:00Z"


async def get(app: Any, path: str, query: str) -> dict[str, Any]:
    """One GET through the ASGI app: the parsed body (asserts a 200)."""
    status, raw = await request(app, "GET", path, query)
    assert status == 200, (status, raw[:300])
    body: dict[str, Any] = json.loads(raw)
    return body


def job(number: int) -> dict[str, Any]:
    """A finished job (the jobs ticker leaves it alone)."""
    return {
        "id": f"job_bench_{number:06d}",
        "kind": "render",
        "projectId": "prj_acme_01",
        "status": "done",
        "phase": None,
        "artifacts": None,
        "progress": 1.0,
        "error": None,
        "cost": 0,
        "createdAt": CREATED,
        "updatedAt": CREATED,
        "completedAt": CREATED,
        "_plan": [],
        "_step": 0,
        "_hold": None,
        "_outcome": None,
        "_events": [],
        "_notify": False,
        "_callback": None,
        "_meta": {},
    }


def project(number: int) -> dict[str, Any]:
    return {
        "id": f"prj_bench_{number:06d}",
        "title": f"Bench project {number}",
        "mediaType": "video",
        "description": "A project made by the paging benchmark.",
        "createdAt": CREATED,
        "updatedAt": CREATED,
    }


def fill(app: Any, start: int, stop: int) -> None:
    """Add jobs and projects ``start`` to ``stop`` (set-up, one transaction)."""
    rt = app.runtime
    with rt.transaction():
        for number in range(start, stop):
            rt.world.insert(WORKSPACE, "jobs", job(number))
            rt.world.insert(WORKSPACE, "projects", project(number))


async def walk(app: Any, path: str, items: str, limit: int) -> tuple[list[str], int, float]:
    """Read a whole list page by page: the cursors of its pages after the first, the items
    read, seconds."""
    started = time.perf_counter()
    query, cursors, count = f"limit={limit}", [], 0
    while True:
        body = await get(app, path, query)
        count += len(body[items])
        if not body["hasMore"]:
            return cursors, count, time.perf_counter() - started
        cursors.append(body["nextCursor"])
        query = f"limit={limit}&cursor={body['nextCursor']}"


async def median_us(app: Any, path: str, query: str, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        await get(app, path, query)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1e6


async def measure(app: Any, records: int, repeat: int) -> None:
    lists = (("/v1/jobs", "jobs"), ("/v1/projects", "projects"))
    sizes = [records // 3, 2 * records // 3, records]
    walks: dict[str, list[tuple[int, float]]] = {path: [] for path, _ in lists}
    filled = 0
    for size in sizes:
        fill(app, filled, size)
        filled = size
        for path, items in lists:
            _, count, seconds = await walk(app, path, items, 100)
            walks[path].append((count, seconds))
    print(f"{'list':14} {'limit':>5} {'first us':>9} {'deep us':>9} {'deep/first':>10}")
    for path, items in lists:
        for limit in (20, 50):
            cursors, _, _ = await walk(app, path, items, limit)
            deep = cursors[-2]  # the last but one page: full, records*limit/N pages in
            first = await median_us(app, path, f"limit={limit}", repeat)
            last = await median_us(app, path, f"limit={limit}&cursor={deep}", repeat)
            print(f"{path:14} {limit:5} {first:9.0f} {last:9.0f} {last / first:10.2f}")
    print()
    print(f"{'list':14} {'records':>8} {'walk ms':>9} {'us/record':>10}  (limit=100)")
    for path, _ in lists:
        for count, seconds in walks[path]:
            print(f"{path:14} {count:8} {seconds * 1e3:9.1f} {seconds / count * 1e6:10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=30_000)
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    app = create_app(Settings(clock="manual", seed=7))
    app.runtime.rate.limit = 10**9  # measure the work, not the limiter's refusals
    asyncio.run(measure(app, args.records, args.repeat))


if __name__ == "__main__":
    main()
