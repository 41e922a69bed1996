"""What a store does for one world, whichever database holds it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from mockserver.platform.documents import DocKey


class StoreError(Exception):
    """The store cannot be used (unreachable, or a write failed); the message is for the
    operator and never holds a secret."""


class SchemaError(StoreError):
    """The store was written by a kit with another schema and cannot be opened as it is."""


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
    """One session's changes: documents to write (value None: delete), or a whole world."""

    docs: Sequence[tuple[DocKey, Any]]
    whole: bool
    durable: bool = True  # False: only state that need not survive a crash (rate buckets)


class WorldStore(Protocol):
    """One world in a SQL store. Calls come from one thread at a time (the event loop's),
    inside a session: :meth:`begin`, then reads, then :meth:`finish` (or :meth:`rollback`)."""

    shared: bool  # other processes may write to it (PostgreSQL): state must be refreshed

    def begin(self) -> tuple[int, int]:
        """Open a transaction holding the world's write lock; answers its (rev, epoch)."""
        ...

    def changes(self, rev: int, epoch: int) -> Delta:
        """The documents written after ``rev``, or the whole world when ``epoch`` is not the
        store's (or nothing was ever written: an empty whole Delta with epoch 0)."""
        ...

    def finish(self, change: Write | None, rev: int, epoch: int) -> tuple[int, int]:
        """Write a session's changes (if any) over revision ``rev`` and commit; answers the
        new (rev, epoch)."""
        ...

    def rollback(self) -> None: ...

    def secret(self, name: str, make: Callable[[], bytes]) -> bytes:
        """A secret kept with the world (the cursor and id keys), made once."""
        ...

    def close(self) -> None: ...
