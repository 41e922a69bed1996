"""Loading fixtures (``fixtures/default.yaml`` or ``--fixtures PATH``) into a fresh world.

A fixtures file holds ``clock.start`` (where the manual clock starts), ``capabilities`` (the
price table) and ``workspaces``. A workspace has ``id``, ``slug``, ``name``, ``credits``,
``members`` (name -> role, budget cap), ``keys`` (each the key in clear, hashed on load and never
kept), ``governance``, and any number of record lists (``projects``, ``campaigns``, ...), each
becoming a collection in file order. Other top-level sections are kept for the areas that read
them (for example ``catalog``); a value ``{include: FILE}`` is read from a YAML file beside the
fixtures file. The rule sections ``jobs``, ``generation``, ``catalog`` and ``hooks`` default to
the bundled ones; a capability missing from ``capabilities`` is not offered (503
``capability_unavailable`` when a call needs it).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from mockserver.platform import yamlload
from mockserver.platform.auth import hash_key, key_label
from mockserver.platform.transactions import plain
from mockserver.resources import fixtures_dir
from mockserver.seams import Seams
from mockserver.world import World

WORKSPACE_FIELDS = ("id", "slug", "name", "credits", "members", "keys", "governance")
# Sections of rules rather than records: a fixtures file that leaves one out gets the bundled one.
RULE_SECTIONS = {
    "jobs": "jobs.yaml",
    "generation": "generation.yaml",
    "catalog": "catalog.yaml",
    "hooks": "hooks.yaml",
}
DEFAULT_GOVERNANCE = {"agentConfigLocked": False, "killSwitch": False, "policyReadable": True}


class FixtureError(ValueError):
    """The fixtures file is not usable."""


def load_fixtures(path: Path) -> dict[str, Any]:
    """The fixtures file, parsed once per process while it is unchanged; treat it as read-only
    (worlds are built from deep copies of it)."""
    try:
        stamp = path.stat().st_mtime_ns
    except OSError as exc:
        raise FixtureError(f"cannot read fixtures {path}: {exc}") from exc
    return _load(path.resolve(), stamp)


@cache
def _load(path: Path, stamp: int) -> dict[str, Any]:
    try:
        data = yamlload.load(path)
    except OSError as exc:
        raise FixtureError(f"cannot read fixtures {path}: {exc}") from exc
    if not isinstance(data, dict) or "workspaces" not in data:
        raise FixtureError(f"{path}: a fixtures file is a mapping with a 'workspaces' list")
    for section, name in RULE_SECTIONS.items():
        data.setdefault(section, {"include": str(fixtures_dir() / name)})
    return _includes(data, path.parent)


def _includes(node: Any, base: Path) -> Any:
    if isinstance(node, dict):
        if set(node) == {"include"}:
            return _includes(yamlload.load(base / node["include"]), base)
        return {key: _includes(value, base) for key, value in node.items()}
    if isinstance(node, list):
        return [_includes(item, base) for item in node]
    return node


def build_world(
    fixtures: dict[str, Any], *, seed: int | None = None, seams: Seams | None = None
) -> World:
    """A new world holding exactly the fixtures (reading them with the seams' rules)."""
    fixtures = plain(fixtures)  # dicts and lists copied; any other value YAML gives is immutable
    data: dict[str, Any] = {
        "capabilities": {
            name: {"available": True, **entry}
            for name, entry in fixtures.get("capabilities", {}).items()
        },
        "keys": {},
        "workspaces": {},
    }
    world = (seams or Seams()).world(data, seed=seed)
    for spec in fixtures["workspaces"]:
        _add_workspace(world, spec)
    for name, value in fixtures.items():
        if name not in ("capabilities", "workspaces", "clock"):
            world.section("fixtures")[name] = value
    return world


def _add_workspace(world: World, spec: dict[str, Any]) -> None:
    workspace_id = spec.get("id") or f"ws_{spec['slug']}"
    members = {
        name: {
            "name": name,
            "role": member["role"],
            "budgetCapped": member.get("budgetCapped", False),
        }
        for name, member in spec["members"].items()
    }
    world.workspaces[workspace_id] = {
        "id": workspace_id,
        "slug": spec["slug"],
        "name": spec.get("name", spec["slug"]),
        "credits": int(spec.get("credits", 0)),
        "members": members,
        "governance": {**DEFAULT_GOVERNANCE, **spec.get("governance", {})},
        "collections": {},
    }
    for key in spec.get("keys", []):
        if key["member"] not in members:
            raise FixtureError(f"key for unknown member {key['member']!r} in {spec['slug']}")
        digest = hash_key(key["key"])
        world.add_key(
            digest,
            {
                "keyId": key_label(digest),
                "workspace": workspace_id,
                "member": key["member"],
                "revoked": False,
            },
        )
    for name, records in spec.items():
        if name in WORKSPACE_FIELDS or not isinstance(records, list):
            continue
        for record in records:
            if "id" not in record:
                raise FixtureError(f"a record of {spec['slug']}/{name} has no id")
            world.insert(workspace_id, name, dict(record))
