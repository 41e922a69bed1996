"""Requests that arrive together on a shared store: one catch-up and count for all of them.

A process on a PostgreSQL store catches up with the others and counts the caller's rate limit
in one statement made once for every request that reached it in the same turn of its event
loop (store/replica.py). These tests send a burst through the ASGI app in one turn, on a real
PostgreSQL server (tests/support/postgres.py; skipped without one, failed under CI).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os

import httpx
import psycopg
import pytest

from mockserver.app import create_app
from tests.conftest import TEST_SETTINGS
from tests.support.contract_check import check_response
from tests.support.postgres import UNAVAILABLE, fresh_schema_url, server_url

OWNER = {"Authorization": "Bearer sk_test_acme_owner"}


@pytest.fixture
def store_url() -> str:
    if server_url() is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs a PostgreSQL server for these tests: {UNAVAILABLE}")
        pytest.skip(UNAVAILABLE)
    return fresh_schema_url()


async def burst(app, requests: list[tuple[str, str, dict | None]]) -> list[httpx.Response]:
    """Every request started in the same turn of the loop; the answers, checked against the
    contract."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://mock.test") as client:
        answers = await asyncio.gather(
            *(client.request(m, path, headers=OWNER, json=body) for m, path, body in requests)
        )
    for answer in answers:
        check_response(answer)
    return answers


def run_with(*apps, scenario) -> None:
    """Run ``scenario`` in one event loop, then stop the apps' background work and let go of
    their stores."""

    async def main() -> None:
        try:
            await scenario()
        finally:
            for app in apps:
                await app.stop_background()

    try:
        asyncio.run(main())
    finally:
        for app in apps:
            app.close()


def statements_counted(app) -> list[str]:
    """The statements the app's store connection sends from now on (the connection's own
    trace of what it executes)."""
    sent: list[str] = []
    conn = app.store.dialect.conn
    execute = conn.execute

    def counting(query, *args, **kwargs):
        sent.append(str(query))
        return execute(query, *args, **kwargs)

    conn.execute = counting
    return sent


def test_a_burst_is_caught_up_once_and_each_request_counted_on_its_own(store_url):
    app = create_app(dataclasses.replace(TEST_SETTINGS, store=store_url, rate_limit=10))
    other = create_app(dataclasses.replace(TEST_SETTINGS, store=store_url, rate_limit=10))

    async def scenario() -> None:
        # Another process makes a product just before the burst: every request sees it.
        made = (await burst(other, [("POST", "/v1/products", {"name": "Made elsewhere"})]))[0]
        assert made.status_code == 200
        sent = statements_counted(app)
        answers = await burst(app, [("GET", "/v1/products?limit=100", None)] * 14)
        counting = [s for s in sent if "rate_buckets" in s]
        assert len(counting) == 1, f"one catch-up and count for the burst, not {len(counting)}"
        statuses = [a.status_code for a in answers]
        assert statuses.count(200) == 9 and statuses.count(429) == 5, statuses
        remaining = sorted(int(a.headers["x-ratelimit-remaining"]) for a in answers)
        assert remaining == [0] * 5 + list(range(9)), "each admitted request counted once"
        for answer in answers:
            if answer.status_code == 200:
                names = [p["name"] for p in answer.json()["products"]]
                assert "Made elsewhere" in names, "the burst sees the other process's write"

    run_with(app, other, scenario=scenario)


def test_a_store_failure_fails_every_request_of_the_burst_and_keeps_nothing(store_url):
    app = create_app(dataclasses.replace(TEST_SETTINGS, store=store_url))
    later = None

    async def scenario() -> None:
        nonlocal later
        listed = (await burst(app, [("GET", "/v1/products?limit=100", None)]))[0]
        before = listed.json()["products"]
        # The database server ends the app's connection (as when it restarts).
        backend = app.store.dialect.execute("SELECT pg_backend_pid()")[0][0]
        with psycopg.connect(server_url(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        answers = await burst(app, [("POST", "/v1/products", {"name": "Lost"})] * 4)
        assert [a.status_code for a in answers] == [503] * 4
        assert {a.json()["code"] for a in answers} == {"upstream_unavailable"}
        later = create_app(dataclasses.replace(TEST_SETTINGS, store=store_url))
        try:
            listed = (await burst(later, [("GET", "/v1/products?limit=100", None)]))[0]
        finally:
            await later.stop_background()
        assert listed.json()["products"] == before, "nothing of the failed burst kept"

    try:
        run_with(app, scenario=scenario)
    finally:
        if later is not None:
            later.close()
