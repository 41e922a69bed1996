"""One transaction per request: a refused or failed call leaves the state exactly as it was.

Two levels: the tracked containers themselves (a Hypothesis state machine against a plain
model), and the mock as a client sees it, with a failure forced at a late step of a paid call
(after the charge, while encoding the response) by patching the step in the test process.
"""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from mockserver import dispatch
from mockserver.areas.generation import state as generation_state
from mockserver.platform.transactions import TrackedDict, TrackedList, adopt, transaction
from tests.robustness.support import api_state

# -- the tracked containers -------------------------------------------------------------------

keys = st.sampled_from(["a", "b", "c", "d"])
leaves = st.one_of(st.integers(-3, 3), st.text(max_size=2), st.none())
values = st.recursive(
    leaves,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=6,
)


def containers(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every dict and list in a tree."""
    found = []
    if isinstance(node, dict):
        found.append(path)
        for key, value in node.items():
            found.extend(containers(value, (*path, key)))
    elif isinstance(node, list):
        found.append(path)
        for index, value in enumerate(node):
            found.extend(containers(value, (*path, index)))
    return found


def at(node: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        node = node[part]
    return node


def ordered(node: Any) -> Any:
    """A tree with dict order made visible (two dicts equal only in the same order)."""
    if isinstance(node, dict):
        return [(k, ordered(v)) for k, v in node.items()]
    if isinstance(node, list):
        return [ordered(v) for v in node]
    return node


class TrackedTree(RuleBasedStateMachine):
    """Any mix of changes, in or out of transactions, committed or failed: the tracked tree
    always equals a plain model that only keeps committed changes, dict order included."""

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, Any] = {"root": {}}
        self.tree = adopt(copy.deepcopy(self.model))

    @staticmethod
    def apply(target: Any, change: tuple[str, str, Any]) -> None:
        kind, key, value = change
        value = copy.deepcopy(value)
        if isinstance(target, dict):
            if kind == "set":
                target[key] = value
            elif kind == "delete" and key in target:
                del target[key]
            elif kind == "pop":
                target.pop(key, None)
            elif kind == "setdefault":
                target.setdefault(key, value)
            elif kind == "update":
                target.update({key: value})
            elif kind == "clear":
                target.clear()
            return
        if kind == "set":
            target.append(value)
        elif kind == "delete" and target:
            del target[0]
        elif kind == "pop" and target:
            target.pop()
        elif kind == "setdefault":
            target.insert(0, value)
        elif kind == "update":
            target.extend([value])
        elif kind == "clear":
            target.reverse()
        elif kind == "replace" and target:
            target[-1] = value

    changes = st.tuples(
        st.sampled_from(["set", "delete", "pop", "setdefault", "update", "clear", "replace"]),
        keys,
        values,
    )

    @rule(data=st.data(), batch=st.lists(changes, min_size=1, max_size=5), fail=st.booleans())
    def transaction(self, data: Any, batch: list[tuple[str, str, Any]], fail: bool) -> None:
        expected = copy.deepcopy(self.model)
        try:
            with transaction():
                for change in batch:
                    path = data.draw(st.sampled_from(containers(expected)))
                    self.apply(at(expected, path), change)
                    self.apply(at(self.tree, path), change)
                if fail:
                    raise RuntimeError("the request failed")
        except RuntimeError:
            pass
        if not fail:
            self.model = expected

    @rule(data=st.data(), change=changes)
    def outside_any_transaction(self, data: Any, change: tuple[Any, ...]) -> None:
        path = data.draw(st.sampled_from(containers(self.model)))
        for tree in (self.model, self.tree):
            self.apply(at(tree, path), change)

    @invariant()
    def tree_equals_model(self) -> None:
        assert ordered(self.tree) == ordered(self.model)

    @invariant()
    def every_container_is_tracked(self) -> None:
        for path in containers(self.tree):
            assert isinstance(at(self.tree, path), TrackedDict | TrackedList), path


TestTrackedTree = TrackedTree.TestCase
TestTrackedTree.settings = settings(
    max_examples=200,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


# -- the mock: a failure at any step undoes the request ---------------------------------------

FILM = {"title": "T", "logline": "A premise.", "genre": "drama", "projectId": "prj_acme_01"}


def fail_after(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, times: int = 1
) -> list[int]:
    """Make the next ``times`` calls of ``module.name`` run, then raise: a bug after that
    step's changes were made. Later calls (the error response itself) run as usual."""
    original = getattr(module, name)
    calls: list[int] = []

    def broken(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if len(calls) >= times:
            return result
        calls.append(1)
        raise RuntimeError(f"injected failure after {name}")

    monkeypatch.setattr(module, name, broken)
    return calls


@pytest.mark.parametrize(
    ("module", "step"),
    [(generation_state, "charge"), (dispatch, "json_response")],
    ids=["after-the-charge", "while-encoding-the-response"],
)
def test_a_paid_call_that_fails_late_charges_nothing_and_keeps_nothing(
    api, control, monkeypatch, caplog, module, step
):
    before = api_state(api, control)
    calls = fail_after(monkeypatch, module, step)
    with caplog.at_level(logging.CRITICAL, logger="mockserver"):
        failed = api.post("/v1/text/film", json=FILM, headers={"Idempotency-Key": "late"})
    assert calls, "the injected failure never ran"
    assert failed.status_code == 500 and failed.json()["code"] == "internal_error"
    assert failed.headers["x-request-id"]
    monkeypatch.undo()
    assert api_state(api, control) == before
    # A failed call does not hold its key: the retry executes (and is charged) once.
    retried = api.post("/v1/text/film", json=FILM, headers={"Idempotency-Key": "late"})
    assert retried.status_code == 200 and "Idempotent-Replayed" not in retried.headers
    cost = retried.json()["cost"]["credits"]
    assert control.credits() == before[0]["credits"] - cost


def test_a_control_call_that_fails_changes_nothing(api, control, monkeypatch, caplog):
    from mockserver.control import plane

    before = api_state(api, control)
    calls = fail_after(monkeypatch, plane, "json_response", times=3)
    with caplog.at_level(logging.CRITICAL, logger="mockserver.control"):
        response = control.http.put("/_mock/workspaces/acme/credits", json={"balance": 5})
        reset = control.http.post("/_mock/reset")
        advanced = control.http.post("/_mock/clock/advance", json={"seconds": 7200})
    assert len(calls) == 3
    assert [r.status_code for r in (response, reset, advanced)] == [500, 500, 500]
    monkeypatch.undo()
    assert api_state(api, control) == before
    assert control.now() == "2026-11-20T09:00:00Z"
