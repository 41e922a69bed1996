"""Creates on several processes pass each other; what read a list is still serialised.

On a PostgreSQL store a transaction that only made new documents (a product created, an
answer kept under a new Idempotency-Key) and took numbers (ids, ``seq``) is an append
(store/base.py ``Write``): it is not checked against other appends, so two workers that create
at the same time on one world both write at once, with no conflict and no second run. A write
that read which records a collection holds is checked against every write, appends included,
so it stays serialisable. Two apps on one schema of a real PostgreSQL server stand for two
workers (tests/support/postgres.py; skipped without one, failed under CI).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from mockserver.app import create_app
from mockserver.store.base import Conflict
from tests.conftest import TEST_SETTINGS
from tests.store.test_together import burst, run_with, store_url  # noqa: F401

ACME = "acme"


def writes_traced(app) -> list[tuple[int, int | None]]:
    """(the revision the app knew, the revision written, None: refused for a conflict) of
    every write of a product that the app's store connection makes from now on (its other
    writes, a ticker's, are not counted)."""
    traced: list[tuple[int, int | None]] = []
    conn = app.store.dialect.conn
    execute = conn.execute

    def tracing(query: Any, params: Any = None, *args: Any, **kwargs: Any) -> Any:
        if not (
            isinstance(params, dict) and any('"products"' in k for k in params.get("keys", ()))
        ):
            return execute(query, params, *args, **kwargs)
        try:
            cursor = execute(query, params, *args, **kwargs)
        except Exception:
            traced.append((int(params["rev"]), None))
            raise
        traced.append((int(params["rev"]), int(cursor.fetchone()[1])))
        cursor.scroll(-1)
        return cursor

    conn.execute = tracing
    return traced


def test_creates_on_two_workers_at_once_never_conflict_and_list_alike(store_url):  # noqa: F811
    """Two workers each create a burst of products at once: each create is written once (no
    write is refused and run again), some were written over another worker's writes (they
    did overlap), and both workers then page through the products in one order, each once."""
    first = create_app(dataclasses.replace(TEST_SETTINGS, store=store_url, rate_limit=100_000))
    second = create_app(dataclasses.replace(TEST_SETTINGS, store=store_url, rate_limit=100_000))
    made: list[str] = []

    async def scenario() -> None:
        traces = [writes_traced(first), writes_traced(second)]
        for round_ in range(5):
            creates = [("POST", "/v1/products", {"name": f"P{round_}-{n}"}) for n in range(8)]
            answers = await asyncio.gather(burst(first, creates), burst(second, creates))
            for answer in answers[0] + answers[1]:
                assert answer.status_code == 200, answer.text
                made.append(answer.json()["product"]["id"])
            writes = [write for trace in traces for write in trace]
            refused = sum(written is None for _, written in writes)
            assert refused == 0, f"{refused} of {len(writes)} writes of creates were refused"
            assert len(writes) == len(made), f"{len(made)} creates took {len(writes)} writes"
            if any(written != known + 1 for known, written in writes):
                break  # a create was written over another worker's: they overlapped
        else:
            pytest.fail("the two workers' writes never overlapped: nothing was judged")
        assert len(set(made)) == len(made), "an id was given twice"
        walks = [await walk(app) for app in (first, second)]
        assert walks[0] == walks[1], "the two workers list the products in different orders"
        assert len(set(walks[0])) == len(walks[0]), "a product was listed twice"
        assert set(made) <= set(walks[0]), "a product made was not listed"

    run_with(first, second, scenario=scenario)


async def walk(app) -> list[str]:
    """Every product's id, two a page, following nextCursor."""
    ids: list[str] = []
    path = "/v1/products?limit=2"
    while True:
        (page,) = await burst(app, [("GET", path, None)])
        assert page.status_code == 200, page.text
        body = page.json()
        ids += [p["id"] for p in body["products"]]
        if not body.get("nextCursor"):
            return ids
        path = f"/v1/products?limit=2&cursor={body['nextCursor']}"


def test_a_write_that_read_a_list_conflicts_with_a_create_made_since(store_url):  # noqa: F811
    """A transaction that counted a collection's records, then wrote, was serialised after
    a create of another worker it did not see: its write is refused (and the unit of work
    runs again, caught up, in the mock). One that read no list passes the create."""
    first = create_app(dataclasses.replace(TEST_SETTINGS, store=store_url))
    second = create_app(dataclasses.replace(TEST_SETTINGS, store=store_url))
    try:
        for app in (first, second):
            app.runtime.persistence.catch_up()
        workspace = first.runtime.world.workspace_by_slug(ACME)["id"]
        insert_product(first, workspace, "Made first")  # the second has not seen it

        rt = second.runtime
        with pytest.raises(Conflict), rt.transaction():
            count = sum(1 for _ in rt.world.records(workspace, "products"))
            rt.world.workspace(workspace)["name"] = f"Has {count} products"
        assert rt.world.workspace(workspace)["name"] != f"Has {count} products", "undone"

        insert_product(second, workspace, "Made second, unseen first")  # an append: passes
        with rt.transaction():  # reads one record by id, writes the workspace: passes too
            rt.world.workspace(workspace)["name"] = "Renamed"
        rt.persistence.catch_up()
        names = {p["name"] for p in rt.world.records(workspace, "products")}
        assert {"Made first", "Made second, unseen first"} <= names
    finally:
        first.close()
        second.close()


def insert_product(app, workspace: str, name: str) -> None:
    rt = app.runtime
    with rt.transaction():
        rt.world.insert(workspace, "products", {"id": rt.world.ids.new("prd"), "name": name})
