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
class Write:
    """One transaction's changes: documents to write (value None: delete), or (``whole``)
    every document of the world, replacing what the store held."""

    docs: Sequence[tuple[DocKey, Any]]
    whole: bool


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
        """Write one transaction's changes over revision ``rev`` and commit; the new
        (rev, epoch). :class:`Conflict` (nothing written) when the world is not at ``rev``."""
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

    def committed(self, changed: frozenset[DocKey], replaced: bool) -> None:
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
