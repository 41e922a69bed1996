"""A runtime's world kept in a SQL store: written through at the end of each session, and
brought up to date at the start of the next.

A *session* is one unit of work against the world: an API or control request, a scheduler
heartbeat, one delivery's claim or result. It holds the world's write lock (in this process
an :class:`asyncio.Lock`; in the store, sql.py's lock), so sessions of every process that
shares the store run one after another. At its start the replica reads what other processes
wrote since (usually nothing); every transaction committed inside it names the documents it
changed (``Runtime.on_commit``); at its end the replica writes their values as they are then,
with the runtime state that is not in the tree, and commits, before the response is sent.

Runtime state outside the tree travels as documents too: ``("meta", "clock")`` (the manual
clock's time), ``("meta", "faults")``, and, only for a store other processes share,
``("meta", "due")`` (the scheduler's next due time) and ``("rate", identity)`` (a rate-limit
window).

A transaction committed outside any session (start-up, a test driving the runtime directly)
is written at once, in a session of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from mockserver.platform.clock import ManualClock, parse_time
from mockserver.platform.documents import DocKey, place
from mockserver.platform.envelope import iso_z
from mockserver.store.base import Delta, StoreError, Write
from mockserver.store.sql import SqlWorld

if TYPE_CHECKING:
    from mockserver.runtime import Commit, Runtime

log = logging.getLogger("mockserver")

_current: ContextVar[Replica | None] = ContextVar("mockserver_session", default=None)
UNKNOWN = -1


class Replica:
    def __init__(self, rt: Runtime, store: SqlWorld) -> None:
        self.rt = rt
        self.store = store
        self.shared = store.shared
        self.rev = 0
        self.epoch = UNKNOWN
        self._lock = store.store.lock  # the process's connection: one session at a time
        self._pending: set[DocKey] = set()
        self._whole = False
        self._written: dict[DocKey, Any] = {}  # runtime documents as the store has them
        self._open()
        rt.on_commit(self._committed)

    # -- start -------------------------------------------------------------------------------

    def _open(self) -> None:
        """Load the world the store holds, or give it this runtime's (the fixtures)."""
        with self._sync_session():
            if self.epoch == 0 and self.rev == 0:  # nothing was ever written
                self._whole = True

    # -- sessions ----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[None]:
        """Hold the world for one unit of work (joins the one this task already holds)."""
        if _current.get() is self:
            yield
            return
        async with self._lock:
            with self._sync_session():
                yield

    def held(self) -> contextlib.AbstractContextManager[None]:
        """A session entered without waiting, for start-up work (the caller holds the
        process's store lock, or no event loop runs yet)."""
        return self._sync_session()

    @contextlib.contextmanager
    def _sync_session(self) -> Iterator[None]:
        token = _current.set(self)
        try:
            self._begin()
            try:
                yield
            except BaseException:
                self._end()
                raise
            self._end()
        finally:
            _current.reset(token)

    async def pause(self, seconds: float) -> None:
        """Wait without holding the world (an injected delay): what is done so far is kept,
        and the world is brought up to date again after."""
        if _current.get() is not self:
            await asyncio.sleep(seconds)
            return
        self._end()
        self._lock.release()
        try:
            await asyncio.sleep(seconds)
        finally:
            await self._lock.acquire()
            self._begin()

    def _begin(self) -> None:
        rev, epoch = self.store.begin()
        try:
            if epoch != self.epoch or rev != self.rev:
                self._apply(self.store.changes(self.rev, self.epoch))
        except BaseException:
            self.store.rollback()
            raise

    def _end(self) -> None:
        try:
            self.rev, self.epoch = self.store.finish(self._collect(), self.rev, self.epoch)
        except BaseException:
            # What this process holds may now differ from the store: read it all again.
            self.epoch = UNKNOWN
            self._pending.clear()
            self._whole = False
            with contextlib.suppress(StoreError):
                self.store.rollback()
            raise
        self._pending.clear()
        self._whole = False

    # -- writing -----------------------------------------------------------------------------

    def _committed(self, commit: Commit) -> None:
        if commit.replaced:
            self._whole = True
            self._pending.clear()
        elif not self._whole:
            self._pending.update(commit.changed)
        if _current.get() is not self:
            self._write_now()

    def _write_now(self) -> None:
        """Write a transaction committed outside any session, in a session of its own (it
        cannot catch up first: its changes were made on what this process held)."""
        if self._lock.locked():
            raise StoreError("a change made outside a session while one is open was not kept")
        rev, epoch = self.store.begin()
        if (rev, epoch) != (self.rev, self.epoch):
            self.store.rollback()
            self.epoch = UNKNOWN
            raise StoreError(
                "another process changed the world since this one last read it; "
                "the change was not kept (run it in a session)"
            )
        self._end()

    def _collect(self) -> Write | None:
        """The session's changes: the documents named, as they are now, and runtime state."""
        runtime_docs = self._runtime_docs()
        if self._whole:
            docs = list(self.rt.world.documents().items())
            docs.extend(runtime_docs.items())
            self._written = dict(runtime_docs)
            return Write(docs, whole=True)
        changed = [
            (key, value)
            for key, value in runtime_docs.items()
            if key not in self._written or self._written[key] != value
        ]
        world = self.rt.world
        named: list[tuple[DocKey, Any]] = []
        for key in self._pending:
            try:
                named.append((key, world.document(key)))
            except KeyError:
                named.append((key, None))
        if not named and not changed:
            return None
        named.sort(key=_order)
        for key, value in changed:
            self._written[key] = value
        durable = bool(named) or any(key[0] != "rate" for key, _ in changed)
        return Write([*named, *changed], whole=False, durable=durable)

    def _runtime_docs(self) -> dict[DocKey, Any]:
        rt = self.rt
        docs: dict[DocKey, Any] = {}
        if isinstance(rt.clock, ManualClock):
            docs["meta", "clock"] = iso_z(rt.clock.now())
        docs["meta", "faults"] = rt.faults.dump()
        if self.shared:
            docs["meta", "due"] = rt.scheduler.next_due
            rate = rt.rate
            for identity in rate.changed:
                window = rate.window(identity)
                docs["rate", identity] = list(window) if window is not None else None
            rate.changed.clear()
        return docs

    # -- reading -----------------------------------------------------------------------------

    def _apply(self, delta: Delta) -> None:
        """Bring this process's world up to what the store holds."""
        rt = self.rt
        if delta.whole:
            if not delta.rows:  # an empty store: this runtime's world will be written
                self.rev, self.epoch = delta.rev, delta.epoch
                return
            tree: dict[str, Any] = {}
            runtime = {}
            for row in delta.rows:
                if row.key[0] in ("meta", "rate"):
                    runtime[row.key] = row.value
                else:
                    place(tree, row.key, row.value)
            rt.replace_world(tree)
            rt.rate.reset()
            rt.rate.changed.clear()
            self._written = {}
            for key, value in runtime.items():
                self._load_runtime(key, value)
        else:
            world = rt.world
            for row in delta.rows:
                if row.key[0] in ("meta", "rate"):
                    self._load_runtime(row.key, row.value)
                elif row.value is None:
                    world.drop_document(row.key)
                else:
                    world.put_document(row.key, row.value)
        self.rev, self.epoch = delta.rev, delta.epoch

    def _load_runtime(self, key: DocKey, value: Any) -> None:
        rt = self.rt
        self._written[key] = value
        if key == ("meta", "clock") and isinstance(rt.clock, ManualClock) and value:
            rt.clock.rewind(parse_time(value))
        elif key == ("meta", "faults") and value is not None:
            rt.faults.load(value)
        elif key == ("meta", "due") and self.shared:
            rt.scheduler.next_due = value
        elif key[0] == "rate" and self.shared:
            rt.rate.load(key[1], value)


def _order(item: tuple[DocKey, Any]) -> tuple[int, int]:
    """Records in insertion order (their ``_seq``), after every other document."""
    key, value = item
    if key[0] == "rec" and isinstance(value, dict):
        return 1, int(value.get("_seq", 0))
    return 0, 0


def in_session() -> bool:
    return _current.get() is not None
