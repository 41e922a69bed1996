"""A transaction names exactly the documents it changed (platform/documents.py).

The property a store relies on: writing the documents ``changed()`` names, as they are after
the transaction (and removing those ``deleted()`` names), turns the state before it into the
state after it. Checked on random world-shaped trees under random changes, moves included,
and through the app: a request's commit names what the request changed, nothing more.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockserver.platform.documents import (
    ANY,
    ROOT,
    DocKey,
    Place,
    Tag,
    child_tag,
    document,
    documents,
    item_tag,
    path_of,
)
from mockserver.platform.transactions import (
    TrackedDict,
    TrackedList,
    adopt,
    plain,
    tag_of,
    transaction,
)
from mockserver.runtime import Commit
from tests.platform.test_transactions import at, containers, ordered

# -- world-shaped trees ------------------------------------------------------------------------

NAMES = ["a", "b"]  # few, so that keys collide: replaced, deleted and re-created documents
FIELDS = st.sampled_from(["a", "b", "n", "collections"])
leaves = st.one_of(st.integers(-3, 3), st.text(max_size=2), st.none())
values = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(FIELDS, inner, max_size=3)
    ),
    max_leaves=6,
)


def keys_at(place: Place) -> list[str]:
    """The keys worth trying in a container at ``place``: the layout's names and a few."""
    return sorted(key for key in place.node.children if key != ANY) + NAMES


@st.composite
def shaped(draw: st.DrawFn, tag: Tag, *, whole: bool = False) -> Any:
    """A value for a slot tagged ``tag``: any JSON inside a document; where documents are
    indexed, mostly dicts of further such values (now and then a leaf)."""
    if type(tag) is tuple:
        return draw(values)
    place: Place = tag  # type: ignore[assignment]
    if not whole and draw(st.integers(0, 7)) == 0:
        return draw(leaves)
    names = draw(st.lists(st.sampled_from(keys_at(place)), max_size=3, unique=True))
    return {name: draw(shaped(place.child(name))) for name in names}


worlds = shaped(ROOT, whole=True)

# -- changes -----------------------------------------------------------------------------------

DICT_CHANGES = ["set", "delete", "pop", "popitem", "setdefault", "update", "clear", "alias", "move"]
LIST_CHANGES = ["append", "insert", "pop", "delete", "extend", "replace", "reverse", "clear"]


def slot_tag(tree: Any, path: tuple[Any, ...], key: Any = None) -> Tag:
    """The tag a value gets at ``path`` (and under ``key`` of the container there)."""
    tag: Tag = ROOT
    node = tree
    for part in path:
        tag = child_tag(tag, part) if isinstance(node, dict) else item_tag(tag)
        node = node[part]
    if key is None:
        return tag
    return child_tag(tag, key) if isinstance(node, dict) else item_tag(tag)


Touch = tuple[Tag, tuple[Any, ...]]  # a slot or container changed: its tag and path


def change(data: st.DataObject, tree: Any) -> list[Touch]:
    """Make one random change to ``tree`` (in place); answers what it touched: by the path it
    took, and by the container's own tag (an alias reaches the documents of its original)."""
    path = data.draw(st.sampled_from(containers(tree)))
    target = at(tree, path)
    if isinstance(target, dict):
        touched = change_dict(data, tree, path, target)
    else:
        touched = change_list(data, tree, path, target)
    if not isinstance(target, TrackedDict | TrackedList):
        return touched  # placed in this transaction: inside what its path says
    own = tag_of(target)
    where = own.path if isinstance(own, Place) else ()
    if isinstance(target, dict) and len(touched[0][1]) > len(path):
        key = touched[0][1][-1]
        return [*touched, (child_tag(own, key), (*where, key))]
    return [*touched, (own, where)]


def change_dict(data: st.DataObject, tree: Any, path: tuple[Any, ...], target: Any) -> list[Touch]:
    kind = data.draw(st.sampled_from(DICT_CHANGES))
    tag = slot_tag(tree, path)
    names = keys_at(tag) if isinstance(tag, Place) else ["a", "b", "n", "collections"]
    key = data.draw(st.sampled_from(names))
    if kind == "clear":
        target.clear()
        return [(tag, path)]
    if kind == "popitem" and target:
        key = next(reversed(target))
    touched = [(slot_tag(tree, path, key), (*path, key))]
    if kind == "popitem" and target:
        target.popitem()
    elif kind in ("delete", "pop"):
        if key in target:
            del target[key]
        else:
            target.pop(key, None)
    elif kind in ("alias", "move"):
        source = moved(data, tree, target)
        if source is not None:
            value = at(tree, source)
            if kind == "move":
                touched.append((slot_tag(tree, source), source))
                del at(tree, source[:-1])[source[-1]]  # dict or list: it leaves its place
            target[key] = value
    else:
        value = data.draw(shaped(touched[0][0]))
        if kind == "set":
            target[key] = value
        elif kind == "setdefault":
            target.setdefault(key, value)
        elif kind == "update":
            target.update({key: value})
    return touched


def moved(data: st.DataObject, tree: Any, target: Any) -> tuple[Any, ...] | None:
    """A container of the tree that can go into ``target``: not the root, not one holding
    ``target`` (that would make a cycle; aliases count)."""
    sources = [
        source for source in containers(tree) if source and not holds(at(tree, source), target)
    ]
    return data.draw(st.sampled_from(sources)) if sources else None


def holds(value: Any, target: Any) -> bool:
    if value is target:
        return True
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(holds(item, target) for item in items)


def change_list(data: st.DataObject, tree: Any, path: tuple[Any, ...], target: Any) -> list[Touch]:
    kind = data.draw(st.sampled_from(LIST_CHANGES))
    value = data.draw(shaped(slot_tag(tree, path, 0)))
    if kind == "append":
        target.append(value)
    elif kind == "insert":
        target.insert(0, value)
    elif kind == "extend":
        target.extend([value])
    elif kind == "reverse":
        target.reverse()
    elif kind == "clear":
        target.clear()
    elif target and kind == "pop":
        target.pop()
    elif target and kind == "delete":
        del target[0]
    elif target and kind == "replace":
        target[-1] = value
    return [(slot_tag(tree, path), path)]


def touches(touch: Touch, doc: DocKey) -> bool:
    """Whether a change at a slot is inside ``doc``, or holds it (documents.py layout)."""
    tag, path = touch
    if type(tag) is tuple:
        return tag == doc
    return path_of(doc)[: len(path)] == path


# -- what the tree must look like after every transaction --------------------------------------


def tags(tree: Any, tag: Tag = ROOT, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """(path, container, the tag it has, the tag it should have) for every container."""
    yield path, tree, tag_of(tree), tag
    items = tree.items() if isinstance(tree, dict) else enumerate(tree)
    for key, item in items:
        if isinstance(item, dict | list):
            inner = child_tag(tag, key) if isinstance(tree, dict) else item_tag(tag)
            yield from tags(item, inner, (*path, key))


def assert_well_placed(tree: Any) -> None:
    """Every container tracked and tagged for where it sits; none in two documents."""
    owners: dict[int, Tag] = {}
    for path, container, has, should in tags(tree):
        assert isinstance(container, TrackedDict | TrackedList), path
        assert has == should, (path, has, should)
        if type(should) is tuple:
            assert owners.setdefault(id(container), should) == should, path


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(world=worlds, data=st.data())
def test_writing_the_changed_documents_turns_the_state_before_into_the_state_after(
    world: dict[str, Any], data: st.DataObject
) -> None:
    tree = adopt(copy.deepcopy(world))
    for _ in range(data.draw(st.integers(1, 3), label="transactions")):
        before = plain(tree)
        fail = data.draw(st.booleans(), label="fail")
        touched: list[Touch] = []
        try:
            with transaction() as tx:
                for _ in range(data.draw(st.integers(1, 6), label="changes")):
                    touched.extend(change(data, tree))
                changed, deleted = tx.changed(), tx.deleted()
                if fail:
                    raise RuntimeError("the request failed")
        except RuntimeError:
            pass
        assert tx.changed() == set() and tx.deleted() == set()  # over: nothing to report
        assert_well_placed(tree)
        after = plain(tree)
        if fail:
            assert ordered(after) == ordered(before)
            continue
        old, new = documents(before), documents(after)
        assert deleted <= changed
        assert not deleted & new.keys(), "a deleted document is still there"
        assert changed - deleted <= new.keys(), "a changed document is not there"
        for doc in changed:  # what a store reads for each, one at a time
            if doc in deleted:
                with pytest.raises(KeyError):
                    document(after, doc)
            else:
                assert ordered(document(after, doc)) == ordered(new[doc])
        replayed = dict(old)
        for doc in changed:
            if doc in deleted:
                replayed.pop(doc, None)
            else:
                replayed[doc] = new[doc]
        assert {k: ordered(v) for k, v in replayed.items()} == {
            k: ordered(v) for k, v in new.items()
        }
        for doc in changed:  # named only when a change reached it
            different = ordered(old.get(doc, ())) != ordered(new.get(doc, ()))
            assert different or any(touches(touch, doc) for touch in touched), doc


# -- examples of the layout ---------------------------------------------------------------------


def small_world() -> Any:
    return adopt(
        {
            "seq": 1,
            "counters": {"prj": 1},
            "keys": {"d1": {"workspace": "w1"}},
            "workspaces": {
                "w1": {
                    "id": "w1",
                    "credits": 10,
                    "collections": {"projects": {"p1": {"id": "p1", "tags": ["x"]}}},
                }
            },
            "idempotency": {},
            "fixtures": {"jobs": {}},
        }
    )


def changes_of(tree: Any, act: Any) -> tuple[set[DocKey], set[DocKey]]:
    with transaction() as tx:
        act(tree)
        return tx.changed(), tx.deleted()


@pytest.mark.parametrize(
    ("act", "changed", "deleted"),
    [
        (lambda t: t["workspaces"]["w1"].__setitem__("credits", 5), {("ws", "w1")}, set()),
        (
            lambda t: t["workspaces"]["w1"]["collections"]["projects"]["p1"]["tags"].append("y"),
            {("rec", "w1", "projects", "p1")},
            set(),
        ),
        (
            lambda t: (
                t["workspaces"]["w1"]["collections"]
                .setdefault("jobs", {})
                .update({"j1": {"id": "j1"}})
            ),
            {("rec", "w1", "jobs", "j1")},
            set(),
        ),
        (
            lambda t: t["workspaces"]["w1"]["collections"]["projects"].pop("p1"),
            {("rec", "w1", "projects", "p1")},
            {("rec", "w1", "projects", "p1")},
        ),
        (
            lambda t: t["idempotency"].setdefault("w1", {}).__setitem__("k", {"status": 200}),
            {("idem", "w1", "k")},
            set(),
        ),
        (lambda t: t.__setitem__("seq", t["seq"] + 1), {("seq",)}, set()),
        (lambda t: t["counters"].__setitem__("job", 1), {("counter", "job")}, set()),
        (
            lambda t: t.setdefault("discovery", {}).setdefault("s", {}),
            {("section", "discovery")},
            set(),
        ),
        (
            lambda t: t["workspaces"].pop("w1"),
            {("ws", "w1"), ("rec", "w1", "projects", "p1")},
            {("ws", "w1"), ("rec", "w1", "projects", "p1")},
        ),
    ],
    ids=[
        "workspace-field",
        "inside-a-record",
        "new-collection",
        "record-deleted",
        "idempotency-entry",
        "seq",
        "counter",
        "section",
        "workspace-deleted",
    ],
)
def test_each_kind_of_change_names_its_document(
    act: Any, changed: set[DocKey], deleted: set[DocKey]
) -> None:
    assert changes_of(small_world(), act) == (changed, deleted)


def test_a_container_moved_to_another_document_is_copied_there() -> None:
    tree = small_world()
    projects = tree["workspaces"]["w1"]["collections"]["projects"]
    with transaction():
        projects["p2"] = projects["p1"]  # the same object under two records
    assert projects["p2"] == projects["p1"] and projects["p2"] is not projects["p1"]
    assert tag_of(projects["p2"]) == ("rec", "w1", "projects", "p2")
    assert changes_of(tree, lambda t: projects["p2"]["tags"].append("z")) == (
        {("rec", "w1", "projects", "p2")},
        set(),
    )
    assert projects["p1"]["tags"] == ["x"]


# -- through the app: a request's commit -------------------------------------------------------


@pytest.fixture
def commits(mock_app: Any, api: Any) -> Iterator[list[Commit]]:
    """The commits of the default runtime while the test runs (after the reset and a tick)."""
    api.get("/v1/projects")  # time-driven catch-up done: its own commit
    seen: list[Commit] = []
    remove = mock_app.runtime.on_commit(seen.append)
    yield seen
    remove()


def test_creating_a_project_changes_the_record_the_numbers_and_the_kept_answer(api, commits):
    created = api.post("/v1/projects", json={"title": "Docs"}, headers={"Idempotency-Key": "d1"})
    assert created.status_code == 200, created.text
    project = created.json()["project"]["id"]
    [commit] = commits
    assert not commit.replaced and commit.deleted == frozenset()
    assert commit.changed == {
        ("rec", "ws_acme", "projects", project),
        ("counter", "prj"),
        ("seq",),
        ("idem", "ws_acme", "d1"),
    }
    state = commit.world.snapshot()
    assert document(state, ("rec", "ws_acme", "projects", project))["title"] == "Docs"
    assert document(state, ("idem", "ws_acme", "d1"))["status"] == 200


def test_a_paid_call_also_changes_the_balance_and_the_ledger(api, commits, mock_app):
    film = {"title": "T", "logline": "A premise.", "genre": "drama", "projectId": "prj_acme_01"}
    made = api.post("/v1/text/film", json=film)
    assert made.status_code == 200, made.text
    [commit] = commits
    ledger = [doc for doc in commit.changed if doc[:3] == ("rec", "ws_acme", "usage")]
    outline = [doc for doc in commit.changed if doc[:3] == ("rec", "ws_acme", "filmOutlines")]
    assert len(ledger) == 1 and len(outline) == 1
    assert commit.changed == {
        ("ws", "ws_acme"),  # credits
        *ledger,
        *outline,
        ("counter", "chg"),
        ("counter", "out"),
        ("seq",),
    }
    world = mock_app.runtime.world
    balance = api.get("/v1/capabilities").json()["balance"]["credits"]
    assert world.workspace("ws_acme")["credits"] == balance


def test_a_refused_or_failed_request_commits_nothing(api, commits):
    refused = api.post("/v1/projects", json={"title": 5}, headers={"Idempotency-Key": "d2"})
    assert refused.status_code == 400
    unknown = api.get("/v1/projects/prj_nowhere")
    assert unknown.status_code == 404
    assert commits == []


def test_a_failing_listener_fails_the_transaction(api, control, mock_app):
    from tests.robustness.support import api_state

    before = api_state(api, control)

    def refuse(_commit: Commit) -> None:
        raise RuntimeError("the store is down")

    remove = mock_app.runtime.on_commit(refuse)
    try:
        failed = api.post("/v1/projects", json={"title": "Lost"}, headers={"Idempotency-Key": "d3"})
    finally:
        remove()
    assert failed.status_code == 500
    assert api_state(api, control) == before


def test_a_reset_is_one_commit_that_replaces_the_world(control, commits, mock_app):
    control.reset()
    assert [commit.replaced for commit in commits] == [True]
    assert commits[0].world is mock_app.runtime.world
