"""Keyset paging on the World's indexes gives what a scan of the collection gives.

Two levels: the World itself (a Hypothesis state machine: inserts, deletes, queries, in and out
of transactions, some of them failing, against a plain scan of the collection), and the mock as
a client sees it (webhook subscriptions created and deleted, some of those calls failing late,
then every walk of the list against the collection's order in the snapshot).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from mockserver import dispatch
from mockserver.platform.cursors import read_page
from mockserver.platform.transactions import transaction
from mockserver.world import Query, World
from tests.support.client import ApiClient, ControlClient

WORKSPACES = ("ws_a", "ws_b")
NAME = "items"

# -- the World --------------------------------------------------------------------------------


def new_world() -> World:
    workspaces = {ws: {"id": ws, "slug": ws, "members": {}, "collections": {}} for ws in WORKSPACES}
    return World({"capabilities": {}, "keys": {}, "workspaces": workspaces})


def scan_after(world: World, workspace_id: str, seq: int) -> list[dict[str, Any]]:
    """What paging read before the indexes: every record, those after ``seq`` kept."""
    return [r for r in world.records(workspace_id, NAME) if r["_seq"] > seq]


def walk(query: Query, limit: int) -> list[dict[str, Any]]:
    """Every record of a query, page by page from the positions the pages end at."""
    seen: list[dict[str, Any]] = []
    position = 0
    while True:
        page = read_page(query.after(position), after_seq=position, limit=limit)
        seen.extend(page.records)
        if not page.more:
            return seen
        assert page.last_seq is not None
        position = page.last_seq


class Failed(Exception):
    """The failure a failing transaction ends with."""


ops = st.sampled_from(["insert", "delete", "query"])


class Positions(RuleBasedStateMachine):
    """Any mix of inserts, deletes and queries, in or out of transactions, committed or failed:
    every query answers what a scan of the collection answers, and an index the World keeps
    always describes its collection (none is left stale by a failed transaction)."""

    def __init__(self) -> None:
        super().__init__()
        self.world = new_world()
        self.scores = itertools.cycle([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])

    def ids(self, workspace_id: str) -> list[str]:
        return list(self.world.collection(workspace_id, NAME))

    def apply(self, op: str, workspace_id: str, pick: int) -> None:
        if op == "insert":
            number = self.world.ids.new("itm")
            record = {"id": number, "score": next(self.scores), "kind": pick % 2}
            self.world.insert(workspace_id, NAME, record)
        elif op == "delete" and (ids := self.ids(workspace_id)):
            self.world.delete(workspace_id, NAME, ids[pick % len(ids)])
        else:
            self.query(workspace_id, pick)

    def query(self, workspace_id: str, pick: int) -> None:
        """Ask something of the indexes (so that one is built, mid-transaction or not)."""
        records = list(self.world.records(workspace_id, NAME))
        after = records[pick % len(records)]["_seq"] if records else 0
        list(self.world.after(workspace_id, NAME, after))
        if pick % 3 == 0:
            list(self.world.ranked(workspace_id, NAME, "score"))

    @rule(op=ops, workspace_id=st.sampled_from(WORKSPACES), pick=st.integers(0, 50))
    def outside_any_transaction(self, op: str, workspace_id: str, pick: int) -> None:
        self.apply(op, workspace_id, pick)

    @rule(
        batch=st.lists(
            st.tuples(ops, st.sampled_from(WORKSPACES), st.integers(0, 50)), min_size=1, max_size=6
        ),
        fail=st.booleans(),
    )
    def in_a_transaction(self, batch: list[tuple[str, str, int]], fail: bool) -> None:
        with contextlib.suppress(Failed), transaction():
            for op, workspace_id, pick in batch:
                self.apply(op, workspace_id, pick)
            if fail:
                raise Failed

    @precondition(lambda self: any(self.ids(ws) for ws in WORKSPACES))
    @rule(workspace_id=st.sampled_from(WORKSPACES), limit=st.integers(1, 4))
    def walk_page_by_page(self, workspace_id: str, limit: int) -> None:
        expected = scan_after(self.world, workspace_id, 0)
        for query in (
            Query(self.world, workspace_id, NAME),
            Query(self.world, workspace_id, NAME, {"kind": 1}),
            Query(self.world, workspace_id, NAME, where=lambda r: r["score"] > 2),
        ):
            matching = [r for r in expected if query.matches(r)]
            walked = walk(query, limit)
            assert [r["id"] for r in walked] == [r["id"] for r in matching]
            assert all(a is b for a, b in zip(walked, matching, strict=True))

    @invariant()
    def every_kept_index_describes_its_collection(self) -> None:
        for (workspace_id, name), index in self.world._indexes.items():
            collection = self.world.collection(workspace_id, name)
            assert index.ids == list(collection)
            assert index.seqs == [r["_seq"] for r in collection.values()]
            for field, ranking in index.rankings.items():
                ranked = sorted(collection.values(), key=lambda r: (-r[field], r["_seq"]))
                assert ranking.ids == [r["id"] for r in ranked]

    @invariant()
    def every_query_answers_what_a_scan_answers(self) -> None:
        world = self.world
        for workspace_id in WORKSPACES:
            records = scan_after(world, workspace_id, 0)
            seqs = [r["_seq"] for r in records]
            for after in {0, -1, *seqs, *(s - 1 for s in seqs), world.last_seq() + 1}:
                found = list(world.after(workspace_id, NAME, after))
                expected = scan_after(world, workspace_id, after)
                assert [r["id"] for r in found] == [r["id"] for r in expected]
                assert all(a is b for a, b in zip(found, expected, strict=True))
                assert world.count_through(workspace_id, NAME, after) == len(records) - len(
                    expected
                )
                at = world.at_seq(workspace_id, NAME, after)
                assert at is next((r for r in records if r["_seq"] == after), None)
            for count in range(len(records) + 2):
                read = records[: min(count, len(records))]
                assert world.seq_of(workspace_id, NAME, count) == (read[-1]["_seq"] if read else 0)
            ranked = sorted(records, key=lambda r: (-r["score"], r["_seq"]))
            assert list(world.ranked(workspace_id, NAME, "score")) == ranked
            for n, record in enumerate(ranked):
                assert list(world.ranked(workspace_id, NAME, "score", record)) == ranked[n + 1 :]


TestPositions = Positions.TestCase
TestPositions.settings = settings(
    max_examples=150,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_an_index_that_missed_a_change_is_built_again():
    world = new_world()
    for n in range(5):
        world.insert("ws_a", NAME, {"id": f"itm_{n}", "score": n})
    assert len(list(world.after("ws_a", NAME, 0))) == 5
    del world.collection("ws_a", NAME)["itm_2"]  # behind the World's back
    assert [r["id"] for r in world.after("ws_a", NAME, 0)] == ["itm_0", "itm_1", "itm_3", "itm_4"]


def test_a_query_filters_by_stored_fields_and_by_a_rule():
    world = new_world()
    for n in range(6):
        world.insert("ws_a", NAME, {"id": f"itm_{n}", "kind": n % 3, "score": n})
    query = Query(world, "ws_a", NAME, {"kind": 1, "score": None}, where=lambda r: r["score"] > 1)
    assert [r["id"] for r in query.after(0)] == ["itm_4"]
    assert query.count_through(world.last_seq()) == 1
    assert query.seq_of(1) == world.collection("ws_a", NAME)["itm_4"]["_seq"]
    assert Query(world, "ws_a", NAME, {"kind": None}).count_through(3) == 3


# -- the mock ---------------------------------------------------------------------------------

SUBSCRIPTIONS = "/v1/webhook-subscriptions"
HOOK = {"url": "http://127.0.0.1:9/hook", "events": ["job.completed"], "secret": "s" * 32}


@contextlib.contextmanager
def failing_late() -> Iterator[None]:
    """The next response fails while being encoded: after the handler changed the world."""
    original = dispatch.json_response
    failed: list[int] = []

    def broken(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if not failed:
            failed.append(1)
            raise RuntimeError("injected failure while encoding the response")
        return result

    logger = logging.getLogger("mockserver")
    level = logger.level
    logger.setLevel(logging.CRITICAL + 1)  # the failure is logged as a bug: expected here
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(dispatch, "json_response", broken)
            yield
    finally:
        logger.setLevel(level)
    assert failed, "the injected failure never ran"


def stored_ids(control: ControlClient) -> list[str]:
    """The subscriptions in the collection's order, read from the snapshot."""
    snapshot = control.call("GET", "/snapshot")["snapshot"]
    collections = snapshot["workspaces"]["ws_acme"]["collections"]
    return list(collections.get("webhookSubscriptions", {}))


steps = st.lists(
    st.tuples(st.sampled_from(["create", "delete", "list"]), st.integers(0, 20), st.booleans()),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=steps)
def test_walks_of_subscriptions_after_creates_deletes_and_failed_calls_see_each_once(
    api: ApiClient, control: ControlClient, steps: list[tuple[str, int, bool]]
) -> None:
    control.reset()
    keys = itertools.count()
    for op, pick, fail in steps:
        ids = stored_ids(control)
        if op == "list" or (op == "delete" and not ids):
            response = api.get(SUBSCRIPTIONS, params={"limit": 1 + pick % 3})
            assert response.status_code == 200, response.text
            continue
        with failing_late() if fail else contextlib.nullcontext():
            if op == "create":
                headers = {"Idempotency-Key": f"k{next(keys)}"}
                response = api.post(SUBSCRIPTIONS, json=HOOK, headers=headers)
            else:
                response = api.delete(f"{SUBSCRIPTIONS}/{ids[pick % len(ids)]}")
        assert response.status_code == (500 if fail else 200), response.text
    expected = stored_ids(control)
    for limit in (1, 2, 3, 100):
        walked = [s["id"] for s in api.walk(SUBSCRIPTIONS, "subscriptions", limit=limit)]
        assert walked == expected
