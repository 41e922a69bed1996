"""All mutable state of the mock, held as one JSON-able tree.

Keeping the state as plain dicts and lists makes ``GET /_mock/snapshot`` a copy and
``PUT /_mock/snapshot`` a replacement, with nothing to forget. Layout::

    {
      "counters": {...},              # id counters (see ids.py)
      "seq": 0,                       # insertion sequence for keyset paging
      "capabilities": {name: {...}},  # the price table, deployment-wide
      "keys": {sha256: {...}},        # API keys, hashed
      "workspaces": {id: {
          "id", "slug", "name", "credits", "members": {name: {...}}, "governance": {...},
          "collections": {name: {id: record}},   # insertion (and so paging) order
      }},
      "idempotency": {workspace_id: {key: {...}}},
      ... areas add their own top-level sections through `section()`.
    }

Records keep internal fields under keys starting with ``_`` (for example ``_seq``); responses
leave them out (envelope.public).

The tree is made of tracked containers (platform/transactions.py): every change made inside
:func:`~mockserver.platform.transactions.transaction` is undone if the transaction fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from mockserver.platform.ids import IdFactory
from mockserver.platform.transactions import adopt, plain


def own_record(world: World, workspace_id: str, name: str, record_id: str) -> dict[str, Any] | None:
    """A record of this workspace, or None (ids of other workspaces are simply not here)."""
    return world.collection(workspace_id, name).get(record_id)


def marked_available(capability: dict[str, Any]) -> bool:
    """A capability of the price table is available while it is marked so (the control plane
    marks it)."""
    return bool(capability["available"])


FindRecord = Callable[["World", str, str, str], "dict[str, Any] | None"]


class World:
    """The state, and the two rules that read it: ``find_record`` (which records a workspace
    sees) and ``capability_available`` (the runtime's seams)."""

    def __init__(
        self,
        data: dict[str, Any],
        *,
        seed: int | None = None,
        find_record: FindRecord = own_record,
        capability_available: Callable[[dict[str, Any]], bool] = marked_available,
    ) -> None:
        data.setdefault("counters", {})
        data.setdefault("seq", 0)
        data.setdefault("idempotency", {})
        self.data: dict[str, Any] = adopt(data)
        self.seed = seed
        self.ids = IdFactory(seed, self.data["counters"])
        self.find_record = find_record
        self.capability_available = capability_available

    # -- workspaces --------------------------------------------------------------------------

    @property
    def workspaces(self) -> dict[str, dict[str, Any]]:
        return self.data["workspaces"]

    def workspace(self, workspace_id: str) -> dict[str, Any]:
        return self.workspaces[workspace_id]

    def workspace_by_slug(self, slug: str) -> dict[str, Any] | None:
        for workspace in self.workspaces.values():
            if workspace["slug"] == slug:
                return workspace
        return None

    # -- collections -------------------------------------------------------------------------

    def collection(self, workspace_id: str, name: str) -> dict[str, dict[str, Any]]:
        return self.workspace(workspace_id).setdefault("collections", {}).setdefault(name, {})

    def get(self, workspace_id: str, name: str, record_id: str) -> dict[str, Any] | None:
        """A record of this workspace, or None (ids of other workspaces are simply not here)."""
        return self.find_record(self, workspace_id, name, record_id)

    def insert(self, workspace_id: str, name: str, record: dict[str, Any]) -> dict[str, Any]:
        """Add a record at the end of its collection's order."""
        self.data["seq"] += 1
        record["_seq"] = self.data["seq"]
        self.collection(workspace_id, name)[record["id"]] = record
        return record

    def records(self, workspace_id: str, name: str) -> Iterator[dict[str, Any]]:
        return iter(self.collection(workspace_id, name).values())

    def section(self, name: str) -> dict[str, Any]:
        """A top-level section an area keeps its own state in (included in snapshots)."""
        return self.data.setdefault(name, {})

    # -- snapshots ---------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of the state in builtin dicts and lists."""
        result: dict[str, Any] = plain(self.data)
        return result
