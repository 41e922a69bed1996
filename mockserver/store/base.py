"""What a store does for one world, whichever database holds it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from mockserver.platform.documents import DocKey
from mockserver.platform.ratelimit import Counted

T = TypeVar("T")


class StoreError(Exception):
    """The store cannot be used (unreachable, or a write failed); the message is for the
    operator and never holds a secret."""


class Conflict(StoreError):
    """Another process wrote to the world since this one last caught up: the transaction is
    undone, and the caller catches up and runs it again."""


class SchemaError(StoreError):
    """The store was written by a kit with another schema and cannot be opened as it is."""


# One answered request as the journal of a shared store keeps it (platform/journal.py):
# its entry's fields but the bodies (JSON), the request's body, the response's body.
JournalRow = tuple[str, bytes | None, bytes | None]


@dataclass(frozen=True, slots=True)
class Row:
    """One document as a store holds it: its key, value (None: deleted) and place in order."""

    key: DocKey
    value: Any
    ord: int


@dataclass(frozen=True, slots=True)
class Delta:
    """What a store holds for a world beyond a known revision.

    ``whole``: the rows are the whole world (first load, or a reset or restore elsewhere
    replaced it); else only the documents written since, deletions included.
    """

    rev: int
    epoch: int
    rows: Sequence[Row]
    whole: bool


@dataclass(frozen=True, slots=True)
class Changes:
    """What one transaction changed, as a store is told at its end (platform/transactions.py)."""

    changed: frozenset[DocKey]
    created: frozenset[DocKey]  # of ``changed``: made by it (no document was under the key)
    read_an_index: bool  # it read which documents an index holds (a list, a count, a search)
    replaced: bool = False  # it replaced the whole world (a reset, a restore)


@dataclass(frozen=True, slots=True)
class Write:
    """One transaction's changes: documents to write (value None: delete), or (``whole``)
    every document of the world, replacing what the store held.

    How a store shared by several processes checks it (store/replica.py, postgres.py):
    - ``serial``: against every write since the revision the process knows (it read an
      index, so another process's new record could change what it read; a whole world);
    - else against the writes since then that were not appends: those that changed a
      document the process may have read;
    - ``appends``: it wrote only documents it created and counters that commute
      (platform/documents.py ``COMMUTING``), so other writes need not be checked against it
      but serial ones.
    Each document of ``created`` is written only where none is (a deleted one aside): one that
    another process made first (the same Idempotency-Key on two workers) is a conflict.
    """

    docs: Sequence[tuple[DocKey, Any]]
    whole: bool
    created: frozenset[DocKey] = frozenset()
    serial: bool = True
    appends: bool = False


class WorldStore(Protocol):
    """One world in a SQL store (sql.SqlWorld), as store/replica.py uses it. Every call is
    synchronous and complete when it returns (no transaction is left open across awaits)."""

    shared: bool  # other processes may write to it (PostgreSQL): catch up before each use

    def ensure(self) -> None:
        """Make the world's row if there is none (revision 0: nothing written yet)."""
        ...

    def whole(self) -> Delta:
        """Everything the store holds of the world."""
        ...

    def catch_up(self, rev: int, epoch: int) -> Delta | None:
        """What others wrote after ``rev``; the whole world when its epoch is not
        ``epoch``; None when nothing."""
        ...

    def write(self, change: Write, rev: int, epoch: int) -> tuple[int, int]:
        """Write one transaction's changes over revision ``rev`` and commit; the revision it
        wrote and the new epoch. :class:`Conflict` (nothing written) when another process's
        write came between (:class:`Write` says which count)."""
        ...

    def secret(self, name: str, make: Callable[[], bytes]) -> bytes:
        """A key kept with the world (cursor, id, data keys), made once."""
        ...


class Persistence(Protocol):
    """How a runtime's world is kept, as the runtime and the dispatcher use it without asking
    which: in this process only (memory.py :class:`~mockserver.store.memory.InMemory`), or
    written through to a SQL store and caught up from it (replica.py
    :class:`~mockserver.store.replica.Replica`). A unit of work (a request, a tick, a delivery
    step) catches up, runs as a transaction through :meth:`retrying` or
    :meth:`retrying_sync` (which own running it again after a conflict), and the
    transaction's end calls :meth:`committed`."""

    shared: bool  # other processes write to the same world

    def catch_up(self) -> None:
        """Bring in what other processes wrote (nothing to do unless ``shared``)."""
        ...

    async def catch_up_together(self, identity: Callable[[], str | None]) -> Counted | None:
        """:meth:`catch_up` for an API request, shared with the requests that arrived with it,
        counting it under ``identity()`` in the shared rate buckets (its count; None when
        nothing was counted)."""
        ...

    def committed(self, changes: Changes) -> None:
        """A transaction is ending: keep what it changed (:class:`Conflict`: undo it)."""
        ...

    def keep_runtime_state(self) -> None:
        """Keep runtime state changed outside any transaction (a fault used up)."""
        ...

    async def retrying(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` (a transaction that may await) until it is not in conflict."""
        ...

    def retrying_sync(self, work: Callable[[], T]) -> T:
        """Run ``work`` (a transaction that cannot await) until it is not in conflict."""
        ...
