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
It is cut into documents (platform/documents.py: a record, a workspace's own fields, a key,
a kept answer, a counter...), and a transaction names the ones it changed (what a store
writes at commit: ``Runtime.on_commit``). A container belongs to one document: one set into
another document is copied there at commit, so identity holds within a document only.
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
    sees) and ``capability_available`` (the runtime's seams).

    The methods below are the whole way in: no module outside this one reads or writes
    ``data`` (tests/mock/test_world_facade.py checks it), so a store can stand behind them.
    The code that handles the whole tree needs no exception either: :meth:`snapshot` copies it
    here, and reset and restore (``Runtime.reset``/``restore``, behind the control plane's
    reset and ``PUT /_mock/snapshot``) replace the World with a new one over new data.
    Exceptions: none outside this module.
    """

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
        """A workspace by id (KeyError if there is none)."""
        workspace: dict[str, Any] = self.data["workspaces"][workspace_id]
        return workspace

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
        record["_seq"] = self.next_seq()
        self.collection(workspace_id, name)[record["id"]] = record
        return record

    def delete(self, workspace_id: str, name: str, record_id: str) -> None:
        """Remove a record of this workspace (KeyError if it is not there)."""
        del self.collection(workspace_id, name)[record_id]

    def find(self, name: str, record_id: str) -> tuple[str, dict[str, Any]] | None:
        """``(workspace id, record)`` of a record in any workspace (the first in workspace
        order), or None. For the control plane, which sees every workspace: it reads the
        collections themselves, not ``find_record``."""
        for workspace_id in self.workspaces:
            record = self.collection(workspace_id, name).get(record_id)
            if record is not None:
                return workspace_id, record
        return None

    def records(self, workspace_id: str, name: str) -> Iterator[dict[str, Any]]:
        return iter(self.collection(workspace_id, name).values())

    def next_seq(self) -> int:
        """Take the next insertion sequence number (the order records are paged in)."""
        self.data["seq"] += 1
        seq: int = self.data["seq"]
        return seq

    def last_seq(self) -> int:
        """The last insertion sequence number taken (0 before any)."""
        seq: int = self.data["seq"]
        return seq

    # -- sections ----------------------------------------------------------------------------

    def section(self, name: str) -> dict[str, Any]:
        """A top-level section an area keeps its own state in (included in snapshots)."""
        return self.data.setdefault(name, {})

    def deliveries(self) -> dict[str, dict[str, Any]]:
        """The webhook deliveries by id, in the order they were made (section ``deliveries``)."""
        return self.section("deliveries")

    def fixture(self, name: str, default: Any = None) -> Any:
        """A read-only rule section of the fixtures (``jobs``, ``generation``, ``catalog``,
        ``hooks``, ...), or ``default`` when the fixtures have none."""
        return self.data.get("fixtures", {}).get(name, default)

    # -- keys and capabilities ---------------------------------------------------------------

    def key(self, digest: str) -> dict[str, Any] | None:
        """The record of an API key by the SHA-256 hex digest of the key, or None."""
        record: dict[str, Any] | None = self.data["keys"].get(digest)
        return record

    def add_key(self, digest: str, record: dict[str, Any]) -> None:
        """Store an API key's record under the digest of the key (fixtures)."""
        self.data["keys"][digest] = record

    def capability(self, name: str) -> dict[str, Any] | None:
        """A capability of the price table by name, or None."""
        entry: dict[str, Any] | None = self.data["capabilities"].get(name)
        return entry

    def capabilities(self) -> dict[str, dict[str, Any]]:
        """The price table by capability name, in catalogue order."""
        table: dict[str, dict[str, Any]] = self.data["capabilities"]
        return table

    # -- idempotency -------------------------------------------------------------------------

    def kept(self, workspace_id: str, key: str) -> dict[str, Any] | None:
        """The answer kept for an Idempotency-Key of this workspace, or None (an expired one
        stays until swept)."""
        entry: dict[str, Any] | None = self.data["idempotency"].get(workspace_id, {}).get(key)
        return entry

    def keep(self, workspace_id: str, key: str, entry: dict[str, Any]) -> None:
        """Keep the answer for an Idempotency-Key of this workspace."""
        self.data["idempotency"].setdefault(workspace_id, {})[key] = entry

    def sweep_kept(self, now: float) -> float | None:
        """Forget kept answers expired at ``now`` (epoch seconds); answers when the next one
        expires (or None)."""
        upcoming: float | None = None
        store = self.data["idempotency"]
        for workspace_id in list(store):
            entries = store[workspace_id]
            expired = [key for key, entry in entries.items() if entry["expiresAt"] <= now]
            for key in expired:
                del entries[key]
            if not entries:
                del store[workspace_id]
                continue
            soonest = min(entry["expiresAt"] for entry in entries.values())
            upcoming = soonest if upcoming is None else min(upcoming, soonest)
        return upcoming

    # -- snapshots ---------------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        """A deep copy of the state in builtin dicts and lists."""
        result: dict[str, Any] = plain(self.data)
        return result
