"""The World is a closed façade: the mock reaches its state only through World's methods.

A store (in memory, SQLite, PostgreSQL) can then stand behind those methods. The check is a
plain grep of the sources; the exceptions are named in one place, :data:`EXCEPTIONS` (World's
docstring lists the same).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import mockserver
from mockserver.world import World

PACKAGE = Path(mockserver.__file__).parent
ROOT = PACKAGE.parent
#: The only modules that may touch a world's ``data`` directly (paths from the repository root).
EXCEPTIONS = frozenset({"mockserver/world.py"})
#: ``x.data[...]`` anywhere, and any ``.data`` of something called ``world`` (``world.data``,
#: ``rt.world.data.get(...)``, ``call.world.data``), or a parameter named ``world_data``.
TOUCHES = re.compile(r"\.data\s*\[|\bworld\.data\b|\bworld_data\b")


def touches() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name in EXCEPTIONS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if TOUCHES.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    return found


def test_no_module_but_the_exceptions_touches_a_worlds_data():
    assert touches() == [], "use (or add) a World method instead of world.data"


def test_the_exceptions_exist():
    assert all((ROOT / name).is_file() for name in EXCEPTIONS)


def test_the_grep_sees_the_touches_it_forbids():
    for line in (
        'rt.world.data["keys"].get(digest)',
        'world.data.get("fixtures", {})',
        "call.world.data['seq']",
        "def authenticate(world_data: dict) -> None: ...",
    ):
        assert TOUCHES.search(line), line
    assert not TOUCHES.search("rt.world.key(digest)")


# -- the accessors ----------------------------------------------------------------------------


def workspace(workspace_id: str) -> dict[str, Any]:
    return {"id": workspace_id, "slug": workspace_id, "members": {}, "collections": {}}


@pytest.fixture
def world() -> World:
    return World(
        {
            "capabilities": {"tts": {"available": True, "price": 1, "unit": "call"}},
            "keys": {"abc": {"keyId": "key_abc", "workspace": "ws_a"}},
            "workspaces": {"ws_a": workspace("ws_a"), "ws_b": workspace("ws_b")},
            "fixtures": {"jobs": {"kinds": {"render": {}}}},
        }
    )


def test_find_names_the_workspace_and_delete_removes(world: World):
    world.insert("ws_b", "jobs", {"id": "job_1"})
    assert world.find("jobs", "job_1") == ("ws_b", {"id": "job_1", "_seq": 1})
    assert world.find("jobs", "job_2") is None
    world.delete("ws_b", "jobs", "job_1")
    assert world.find("jobs", "job_1") is None
    with pytest.raises(KeyError):
        world.delete("ws_b", "jobs", "job_1")


def test_sequence_numbers(world: World):
    assert world.last_seq() == 0
    assert world.next_seq() == 1
    assert world.insert("ws_a", "jobs", {"id": "job_1"})["_seq"] == 2
    assert world.last_seq() == 2


def test_keys_capabilities_fixtures_and_deliveries(world: World):
    assert world.key("abc") == {"keyId": "key_abc", "workspace": "ws_a"}
    assert world.key("nope") is None
    world.add_key("def", {"keyId": "key_def", "workspace": "ws_b"})
    assert world.key("def") == {"keyId": "key_def", "workspace": "ws_b"}
    assert world.capability("tts") == {"available": True, "price": 1, "unit": "call"}
    assert world.capability("nope") is None
    assert list(world.capabilities()) == ["tts"]
    assert world.fixture("jobs") == {"kinds": {"render": {}}}
    assert world.fixture("hooks") is None and world.fixture("catalog", {}) == {}
    assert world.deliveries() == {} and world.deliveries() is world.section("deliveries")


def test_kept_answers_are_kept_and_swept(world: World):
    world.keep("ws_a", "k1", {"expiresAt": 10.0})
    world.keep("ws_a", "k2", {"expiresAt": 20.0})
    world.keep("ws_b", "k1", {"expiresAt": 30.0})
    assert world.kept("ws_a", "k1") == {"expiresAt": 10.0}
    assert world.kept("ws_b", "k2") is None and world.kept("ws_c", "k1") is None
    assert world.sweep_kept(10.0) == 20.0
    assert world.kept("ws_a", "k1") is None
    assert world.sweep_kept(30.0) is None
    assert world.snapshot()["idempotency"] == {}
