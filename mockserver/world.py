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

A cursor list reads a collection from a position (:class:`Query`, :meth:`World.after`): each
collection's order is indexed beside the tree (positions.py), so a page deep in a large
collection costs what the first page costs.

The tree is made of tracked containers (platform/transactions.py): every change made inside
:func:`~mockserver.platform.transactions.transaction` is undone if the transaction fails.
It is cut into documents (platform/documents.py: a record, a workspace's own fields, a key,
a kept answer, a counter...), and a transaction names the ones it changed (what a store
writes at commit: ``Runtime.on_commit``). A container belongs to one document: one set into
another document is copied there at commit, so identity holds within a document only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Any

from mockserver.platform.documents import DocKey, document, documents, place, remove
from mockserver.platform.ids import IdFactory
from mockserver.platform.transactions import active, adopt, plain, read_an_index
from mockserver.positions import Index


def own_record(world: World, workspace_id: str, name: str, record_id: str) -> dict[str, Any] | None:
    """A record of this workspace, or None (ids of other workspaces are simply not here)."""
    return world.record_in(workspace_id, name, record_id)


def marked_available(capability: dict[str, Any]) -> bool:
    """A capability of the price table is available while it is marked so (the control plane
    marks it)."""
    return bool(capability["available"])


FindRecord = Callable[["World", str, str, str], "dict[str, Any] | None"]


class Query:
    """The records of one collection of a workspace that a cursor list pages, in ``_seq``
    order: those whose stored fields equal ``equal`` (a None value filters nothing: a query
    parameter left out) and that ``where`` keeps (a rule the area computes).

    A list reads it from a position (:meth:`after`): the position is found by bisection, and
    records that do not match are skipped from there on, so a page costs the page plus the
    records it skips, however deep it is.
    """

    __slots__ = ("equal", "name", "where", "workspace_id", "world")

    def __init__(
        self,
        world: World,
        workspace_id: str,
        name: str,
        equal: Mapping[str, Any] | None = None,
        where: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        self.world = world
        self.workspace_id = workspace_id
        self.name = name
        self.equal = {k: v for k, v in equal.items() if v is not None} if equal else {}
        self.where = where

    def matches(self, record: dict[str, Any]) -> bool:
        return all(record[k] == v for k, v in self.equal.items()) and (
            self.where is None or self.where(record)
        )

    def after(self, seq: int) -> Iterator[dict[str, Any]]:
        """The matching records after position ``seq`` (``_seq`` greater), in order."""
        records = self.world.after(self.workspace_id, self.name, seq)
        if not self.equal and self.where is None:
            return records
        return filter(self.matches, records)

    def count_through(self, seq: int) -> int:
        """How many matching records sit at or before position ``seq``."""
        if not self.equal and self.where is None:
            return self.world.count_through(self.workspace_id, self.name, seq)
        count = 0
        for record in self.after(0):
            if record["_seq"] > seq:
                break
            count += 1
        return count

    def seq_of(self, count: int) -> int:
        """The position after the first ``count`` matching records (all when fewer): the
        ``_seq`` of the last of them, 0 for none."""
        if not self.equal and self.where is None:
            return self.world.seq_of(self.workspace_id, self.name, count)
        seq = 0
        for n, record in enumerate(self.after(0)):
            if n == count:
                break
            seq = record["_seq"]
        return seq


def _in_order(collection: dict[str, dict[str, Any]], record: dict[str, Any]) -> None:
    """Keep a collection in ``_seq`` order when ``record``, just placed at its end, has a lower
    one than the records before it: those move after it (a few: made at the same time)."""
    seq = record["_seq"]
    later: list[str] = []
    for record_id in reversed(collection):
        other = dict.__getitem__(collection, record_id)
        if other is record:
            continue
        if other["_seq"] < seq:
            break
        later.append(record_id)
    for record_id in reversed(later):
        dict.__setitem__(collection, record_id, dict.pop(collection, record_id))


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
        self._indexes: dict[tuple[str, str], Index] = {}
        self._slots, self._slot = 1, 0  # see number()

    # -- workspaces --------------------------------------------------------------------------

    @property
    def workspaces(self) -> dict[str, dict[str, Any]]:
        read_an_index()
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
        """A collection of a workspace, made empty if it has none yet (KeyError for a workspace
        that does not exist).

        What a collection holds is read here and by the lists, counts and searches below
        (:func:`~mockserver.platform.transactions.read_an_index`: a store shared by several
        processes serialises such a transaction's write against every other write); a record
        looked up by its id (:meth:`get`, :meth:`record_in`) or added (:meth:`insert`) is not
        such a read."""
        read_an_index()
        return self._collection(workspace_id, name)

    def _collection(self, workspace_id: str, name: str) -> dict[str, dict[str, Any]]:
        try:
            collections = self.data["workspaces"][workspace_id]["collections"]
            found: dict[str, dict[str, Any]] = collections[name]
        except KeyError:
            return self.workspace(workspace_id).setdefault("collections", {}).setdefault(name, {})
        return found

    def get(self, workspace_id: str, name: str, record_id: str) -> dict[str, Any] | None:
        """A record of this workspace, or None (ids of other workspaces are simply not here)."""
        return self.find_record(self, workspace_id, name, record_id)

    def record_in(self, workspace_id: str, name: str, record_id: str) -> dict[str, Any] | None:
        """The record of a collection under ``record_id``, or None (the seams' ``find_record``
        decides which of them a workspace sees: :meth:`get`)."""
        return self._collection(workspace_id, name).get(record_id)

    def insert(self, workspace_id: str, name: str, record: dict[str, Any]) -> dict[str, Any]:
        """Add a record at the end of its collection's order."""
        record["_seq"] = self.next_seq()
        self._collection(workspace_id, name)[record["id"]] = record
        self._note_insert(workspace_id, name, record)
        return record

    def delete(self, workspace_id: str, name: str, record_id: str) -> None:
        """Remove a record of this workspace (KeyError if it is not there)."""
        del self._collection(workspace_id, name)[record_id]
        self._note_delete(workspace_id, name, record_id)

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

    def number(self, slots: int, slot: int) -> None:
        """Number with ``slot`` of ``slots``: the ids this world makes hash the slot
        (platform/ids.py), and each sequence number it takes is the next multiple of
        ``slots`` plus ``slot``. Processes sharing a store each take a slot of their own
        (store/replica.py), so that two that take a number at once take two; a single process
        numbers with slot 0 of 1, one after another."""
        self.ids.slot = slot
        self._slots, self._slot = slots, slot

    def next_seq(self) -> int:
        """Take the next insertion sequence number (the order records are paged in)."""
        slots = self._slots
        seq: int = (self.data["seq"] // slots + 1) * slots + self._slot
        self.data["seq"] = seq
        return seq

    def last_seq(self) -> int:
        """The last insertion sequence number taken (0 before any)."""
        seq: int = self.data["seq"]
        return seq

    # -- positions ---------------------------------------------------------------------------
    # Each collection's paging order as an index (positions.py), built when the collection is
    # first queried, kept up to date by the two _note_ methods (every record placed or taken
    # out passes there), forgotten by a transaction that fails after changing it.

    def after(self, workspace_id: str, name: str, after_seq: int) -> Iterator[dict[str, Any]]:
        """The records of a collection after position ``after_seq`` (``_seq`` greater), in
        order; the first is found by bisection."""
        if after_seq < 1:  # the start: every record (a _seq is at least 1), no index needed
            return iter(self.collection(workspace_id, name).values())
        collection, index = self._index(workspace_id, name)
        return index.after(collection, after_seq)

    def at_seq(self, workspace_id: str, name: str, seq: int) -> dict[str, Any] | None:
        """The record of a collection at position ``seq``, or None."""
        collection, index = self._index(workspace_id, name)
        return index.at(collection, seq)

    def count_through(self, workspace_id: str, name: str, seq: int) -> int:
        """How many records of a collection sit at or before position ``seq``."""
        return self._index(workspace_id, name)[1].count_through(seq)

    def seq_of(self, workspace_id: str, name: str, count: int) -> int:
        """The position after the first ``count`` records of a collection (all when fewer):
        the ``_seq`` of the last of them, 0 for none."""
        return self._index(workspace_id, name)[1].seq_of(count)

    def ranked(
        self, workspace_id: str, name: str, field: str, after: dict[str, Any] | None = None
    ) -> Iterator[dict[str, Any]]:
        """The records of a collection by ``field``, highest first, ties oldest first; those
        ranked after the record ``after`` when given. The field must never change once a
        record is stored (the ranking is kept as records come and go, not as they change)."""
        collection, index = self._index(workspace_id, name)
        ranking = index.ranking(collection, field)
        return ranking.after(collection, None if after is None else ranking.key(after))

    def _index(self, workspace_id: str, name: str) -> tuple[dict[str, dict[str, Any]], Index]:
        """A collection and its index (built now if there is none, or if it went stale)."""
        collection = self.collection(workspace_id, name)
        key = (workspace_id, name)
        index = self._indexes.get(key)
        if index is None or len(index.ids) != len(collection):  # a last resort: see positions.py
            index = self._indexes[key] = Index(collection)
            self._guard(key, index)
        return collection, index

    def _note_insert(
        self, workspace_id: str, name: str, record: dict[str, Any], by_seq: bool = False
    ) -> None:
        """A record was placed at the end of its collection (``by_seq``: where its ``_seq`` puts
        it, the collection having been put back in ``_seq`` order: put_document)."""
        key = (workspace_id, name)
        index = self._indexes.get(key)
        if index is None:
            return
        if index.place(record) if by_seq else index.append(record):
            self._guard(key, index)
        else:
            del self._indexes[key]

    def _note_delete(self, workspace_id: str, name: str, record_id: str) -> None:
        """A record was taken out of its collection."""
        key = (workspace_id, name)
        index = self._indexes.get(key)
        if index is None:
            return
        if index.remove(record_id):
            self._guard(key, index)
        else:
            del self._indexes[key]

    def _guard(self, key: tuple[str, str], index: Index) -> None:
        """Have the open transaction, if any, forget the index when it fails: the collection
        goes back to what it was, and its index is built again when next queried."""
        tx = active()
        if tx is not None and index.guard is not tx:
            index.guard = tx
            tx.on_rollback(partial(self._forget, key, index))

    def _forget(self, key: tuple[str, str], index: Index) -> None:
        if self._indexes.get(key) is index:
            del self._indexes[key]

    # -- sections ----------------------------------------------------------------------------

    def section(self, name: str) -> dict[str, Any]:
        """A top-level section an area keeps its own state in (included in snapshots)."""
        return self.data.setdefault(name, {})

    def deliveries(self) -> dict[str, dict[str, Any]]:
        """The webhook deliveries by id, in the order they were made (section ``deliveries``)."""
        read_an_index()
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
        read_an_index()
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
        read_an_index()
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

    def snapshot(self, copy: bool = True) -> dict[str, Any]:
        """A deep copy of the state in builtin dicts and lists. With ``copy=False``, the
        state's own containers under a new top-level dict instead: for a caller that encodes
        it at once, before anything can change it, and neither keeps nor changes it (a
        tracked container encodes as the builtin one: its reads are the builtin ones)."""
        if not copy:
            return dict(self.data)
        result: dict[str, Any] = plain(self.data)
        return result

    # -- documents (replication) -------------------------------------------------------------

    def document(self, doc: DocKey) -> Any:
        """One document's value as a store writes it (KeyError when there is none)."""
        return document(self.data, doc)

    def documents(self) -> dict[DocKey, Any]:
        """Every document and its value, in the tree's order: the whole world for a store."""
        return documents(self.data)

    def put_document(self, doc: DocKey, value: Any) -> None:
        """Put a document another process wrote (store/replica.py), outside any transaction:
        a new record goes where its ``_seq`` puts it in its collection (at the end, or before
        records made at the same time by others: numbered by slot, World.number)."""
        new = place(self.data, doc, value)
        if new and doc[0] == "rec":
            collection = self._collection(doc[1], doc[2])
            record = collection[doc[3]]
            _in_order(collection, record)
            self._note_insert(doc[1], doc[2], record, by_seq=True)

    def drop_document(self, doc: DocKey) -> None:
        """Take out a document another process deleted (store/replica.py)."""
        if remove(self.data, doc) and doc[0] == "rec":
            self._note_delete(doc[1], doc[2], doc[3])
