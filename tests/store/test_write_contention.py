"""Writes to one world from many workers at once are all kept: none is refused because another
worker wrote first (issue 28).

A real ``mockserver --workers 4`` on a real PostgreSQL server (tests/support/postgres.py: skipped
without one, failed under CI) takes 64 concurrent product creates, each on a connection of its
own (so they spread over the workers), for 10 s. Every one answers 200, and the world holds
exactly the products that were answered: none lost, none twice.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.store.process import running
from tests.support.client import ApiClient
from tests.support.postgres import fresh_schema_url, required_server_url

OWNER = {"Authorization": "Bearer sk_test_acme_owner"}
CONCURRENT = 64
SECONDS = 10.0


@pytest.fixture(scope="module")
def database() -> str:
    return required_server_url()


async def create_for(base_url: str, until: float, n: int) -> list[httpx.Response]:
    """One client: product creates on its own connection until ``until``."""
    answers = []
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as http:
        i = 0
        while time.monotonic() < until:
            i += 1
            body = {"name": f"Contended product {n}-{i}"}
            answers.append(await http.post("/v1/products", json=body, headers=OWNER))
    return answers


async def load(base_url: str) -> list[httpx.Response]:
    until = time.monotonic() + SECONDS
    clients = [create_for(base_url, until, n) for n in range(CONCURRENT)]
    return [answer for answers in await asyncio.gather(*clients) for answer in answers]


def products_of_acme(base_url: str) -> set[str]:
    with httpx.Client(base_url=base_url, timeout=60) as http:
        found = ApiClient(http).walk("/v1/products", "products", limit=100)
    return {product["id"] for product in found}


def test_concurrent_creates_on_four_workers_are_all_kept(database):
    url = fresh_schema_url()
    with running("--store", url, "--clock", "manual", "--workers", "4", "--rate-limit",
                 "100000000") as mock:  # fmt: skip
        before = products_of_acme(mock.base_url)
        answers = asyncio.run(load(mock.base_url))
        statuses: dict[int, int] = {}
        for answer in answers:
            statuses[answer.status_code] = statuses.get(answer.status_code, 0) + 1
        refused = [a.text for a in answers if a.status_code != 200][:3]
        assert set(statuses) == {200}, f"statuses {statuses}; e.g. {refused}"
        made = [answer.json()["product"]["id"] for answer in answers]
        assert len(set(made)) == len(made)  # no id given twice
        assert products_of_acme(mock.base_url) - before == set(made)  # none lost, none extra
