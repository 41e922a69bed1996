"""A runtime's world kept in a SQL store: written through at every commit, caught up at the
start of every unit of work.

- **Writing.** Every transaction that changed the world (``Runtime.on_commit``) writes the
  documents it named, with their values as they are at its end, before it commits in memory
  and so before the response is built and sent. The write moves the world's revision from
  the one this process knows; when another process moved it first, the write fails with
  :class:`~mockserver.store.base.Conflict`, nothing is written, and the transaction is undone.
- **Catching up.** Each unit of work (an API or control request, a heartbeat tick, a
  delivery step) starts by reading what other processes wrote since this one last looked
  (one statement: usually nothing). A SQLite file has one process, so there is never
  anything to read.
- **Conflicts.** A unit of work whose write conflicted runs once more holding the world's
  write lock (:meth:`Replica.writing`): taken without blocking anyone (other processes' writes
  fail as conflicts while it is held, and their units of work queue for it in turn), caught
  up under it, kept to the write. That run cannot conflict, so no write is ever refused
  because another process wrote first: :func:`retrying` and :func:`retrying_sync`.

Runtime state outside the tree is written with the transaction that changed it, as documents
of its own: ``("meta", "clock")`` (the manual clock's time), ``("meta", "faults")``,
``("meta", "rate-limit")`` (a limit set through the control plane, or None) and, for a
store other processes share, ``("meta", "due")`` (the scheduler's next due time). Rate buckets
of a shared store are rows of their own (the rate limiter counts them there).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextvars import ContextVar
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from mockserver.platform.clock import ManualClock, parse_time
from mockserver.platform.documents import DocKey, place
from mockserver.platform.envelope import iso_z
from mockserver.platform.faults import Faults
from mockserver.platform.ratelimit import WINDOW_SECONDS
from mockserver.store.base import Conflict, Delta, StoreError, Write
from mockserver.store.sql import SqlWorld

if TYPE_CHECKING:
    from mockserver.runtime import Runtime

log = logging.getLogger("mockserver")
UNKNOWN = -1
NO_FAULTS = Faults().dump()
RATE_LIMIT: DocKey = ("meta", "rate-limit")
T = TypeVar("T")
LOCKED_ATTEMPTS = 3  # runs under the write lock (another only when the lock was lost with
# the connection: the server restarted, say)
JOIN_SECONDS = 0.010  # a unit of work joins this process's hold of the lock while it is younger
POLL_SECONDS = (0.0002, 0.004)  # first and longest pause between tries of a held lock
BUSY_SECONDS = 1.0  # other processes wrote to the world within this long: its writes contend
SYNC_WAIT_SECONDS = 5.0  # how long a unit of work that cannot await polls for the lock


class Replica:
    def __init__(self, rt: Runtime, store: SqlWorld) -> None:
        self.rt = rt
        self.store = store
        self.shared = store.shared
        self.rev = 0
        self.epoch = UNKNOWN
        self._written: dict[DocKey, Any] = {}  # runtime documents as the store has them
        self._clock_written: datetime | None = None
        self._batch: _Batch | None = None  # the catch-up the requests of this turn wait for
        self._lock = _WriteLock(store)
        self._others_at = -BUSY_SECONDS  # when it last found that others had written
        self._open()

    def _open(self) -> None:
        """Load the world the store holds, or give it this runtime's (the fixtures)."""
        self.store.ensure()
        delta = self.store.whole()
        if delta.rows:
            self._apply(delta)
            return
        self.rev, self.epoch = delta.rev, delta.epoch
        try:
            self._write(whole=True, changed=frozenset())
        except Conflict:  # another process started on the same store at the same moment
            self._apply(self.store.whole())

    # -- catching up -------------------------------------------------------------------------

    def catch_up(self, counting: str | None = None) -> None:
        """Before a unit of work: bring this process's world up to what the store holds
        (others' writes; a SQLite file has no others). With ``counting``, that rate-limit
        identity's request is counted in the same round trip."""
        if not self.shared:
            return
        rate = self.rt.rate
        rate.counted = None
        if counting is None:
            delta = self.store.catch_up(self.rev, self.epoch)
        else:
            now = self.rt.clock.timestamp()
            delta, counted = self.store.catch_up_counting(
                self.rev, self.epoch, {counting: 1}, now, WINDOW_SECONDS
            )
            rate.counted = (counting, *counted[counting])
        if delta is not None:
            self._apply(delta)

    async def catch_up_together(self, counting: str | None) -> None:
        """:meth:`catch_up` for an API request, made once for every request that reaches this
        point in the same turn of the event loop (those that arrived together): one statement
        catches up and counts each of them (``counting``: its rate-limit identity, or None).
        Each request is then served on the world as of that statement, which was made after
        it arrived. A failure of the store fails each of them."""
        if not self.shared:
            return
        batch = self._batch
        if batch is None:
            batch = self._batch = _Batch(asyncio.get_running_loop().create_future())
            # After the requests already waiting to run in this turn have joined.
            asyncio.get_running_loop().call_soon(self._catch_up_batch, batch)
        index = batch.join(counting)
        # shield: a request that goes away (cancelled) does not cancel the others' batch.
        counted = await asyncio.shield(batch.done)
        self.rt.rate.counted = counted[index] if counting is not None else None

    def _catch_up_batch(self, batch: _Batch) -> None:
        self._batch = None
        try:
            if batch.hits:
                now = self.rt.clock.timestamp()
                delta, after = self.store.catch_up_counting(
                    self.rev, self.epoch, batch.hits, now, WINDOW_SECONDS
                )
            else:
                delta, after = self.store.catch_up(self.rev, self.epoch), {}
            if delta is not None:
                self._apply(delta)
        except BaseException as exc:  # the store failed: every request of the batch answers so
            batch.done.set_exception(exc)
            return
        batch.done.set_result(batch.counts(after))

    def _apply(self, delta: Delta) -> None:
        rt = self.rt
        if delta.whole:
            tree: dict[str, Any] = {}
            runtime = {}
            for row in delta.rows:
                if row.key[0] == "meta":
                    runtime[row.key] = row.value
                else:
                    place(tree, row.key, row.value)
            rt.replace_world(tree)
            self._written = {}
            runtime.setdefault(RATE_LIMIT, None)  # a whole world without one: the start-up limit
            for key, value in runtime.items():
                self._load_runtime(key, value)
        else:
            if delta.rows:
                self._others_at = time.monotonic()
            world = rt.world
            for row in delta.rows:
                if row.key[0] == "meta":
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
            self._clock_written = rt.clock.now()
        elif key == ("meta", "faults") and value is not None:
            rt.faults.load(value)
        elif key == RATE_LIMIT:
            rt.rate.set_limit(value)
        elif key == ("meta", "due") and self.shared:
            rt.scheduler.next_due = value

    # -- the world's write lock ----------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        """Hold the world's write lock, caught up under it: a unit of work run inside
        cannot conflict. Waits (without blocking the loop) while another process holds it.
        Its write is committed under the lock and waited for on disk after it is given
        back, so that the lock is held for no flush."""
        await self._lock.enter()
        pending = _Unflushed()
        token = _unflushed.set(pending)
        try:
            self.catch_up()
            yield
        finally:
            _unflushed.reset(token)
            self._lock.exit(flush=pending.writes > 0)

    @contextlib.contextmanager
    def writing_sync(self) -> Iterator[None]:
        """:meth:`writing` for a unit of work that cannot await (a tick, a delivery step):
        polls, blocking the loop, for at most SYNC_WAIT_SECONDS (then :class:`Conflict`)."""
        self._lock.enter_sync()
        pending = _Unflushed()
        token = _unflushed.set(pending)
        try:
            self.catch_up()
            yield
        finally:
            _unflushed.reset(token)
            self._lock.exit(flush=pending.writes > 0)

    # -- writing -----------------------------------------------------------------------------

    def committed(self, changed: frozenset[DocKey], replaced: bool) -> None:
        """A transaction is ending: write what it changed (a Conflict undoes it)."""
        self._write(whole=replaced, changed=changed)

    def keep_runtime_state(self) -> None:
        """Write runtime state changed outside any transaction (a fault used up)."""
        self._write(whole=False, changed=frozenset())

    def _write(self, *, whole: bool, changed: frozenset[DocKey]) -> None:
        runtime = self._runtime_changes(whole)
        world = self.rt.world
        if whole:
            docs = list(world.documents().items())
        else:
            docs = []
            for key in changed:
                try:
                    docs.append((key, world.document(key)))
                except KeyError:
                    docs.append((key, None))
            docs.sort(key=_order)
        if not docs and not runtime:
            return
        pending = _unflushed.get()
        flush = pending is None or whole
        # Others wrote lately (or this process holds the write lock because they did): the
        # world's row is not kept locked while the disk is written.
        contended = pending is not None or time.monotonic() - self._others_at < BUSY_SECONDS
        self.rev, self.epoch = self.store.write(
            Write([*docs, *runtime.items()], whole=whole), self.rev, self.epoch, flush, contended
        )
        if not flush:
            pending.writes += 1  # type: ignore[union-attr]
        self._written.update(runtime)
        if isinstance(self.rt.clock, ManualClock):
            self._clock_written = self.rt.clock.now()

    def _runtime_changes(self, whole: bool) -> dict[DocKey, Any]:
        """The runtime documents that differ from what the store has (all of them: whole)."""
        rt = self.rt
        found: dict[DocKey, Any] = {}
        clock = rt.clock
        if isinstance(clock, ManualClock) and (whole or clock.now() != self._clock_written):
            found["meta", "clock"] = iso_z(clock.now())
        written = self._written.get(("meta", "faults"))
        if whole or rt.faults.active or written is None or written != NO_FAULTS:
            faults = rt.faults.dump()
            if whole or written != faults:
                found["meta", "faults"] = faults
        limit = rt.rate.changed_limit
        if whole or self._written.get(RATE_LIMIT) != limit:
            found[RATE_LIMIT] = limit
        if self.shared:
            due = rt.scheduler.next_due
            if whole or ("meta", "due") not in self._written or self._written["meta", "due"] != due:
                found["meta", "due"] = due
        return found


class _WriteLock:
    """This process's hold of one world's write lock (a session-level advisory lock of its
    connection, store/postgres.py), shared by every unit of work of the process that needs it
    at the same time: taken by the first, given back when the last leaves. A hold older than
    JOIN_SECONDS takes no one new, so other processes get their turn. Taking it never waits
    in the database: a try, then a short pause on the loop, again."""

    def __init__(self, store: SqlWorld) -> None:
        self.store = store
        self.users = 0
        self.held = False
        self.since = 0.0

    def _join(self) -> bool:
        if self.held and time.monotonic() - self.since < JOIN_SECONDS:
            self.users += 1
            return True
        if not self.held and self.store.try_hold():
            self.held, self.since = True, time.monotonic()
            self.users += 1
            return True
        return False

    async def enter(self) -> None:
        pause = POLL_SECONDS[0]
        while not self._join():
            await asyncio.sleep(random.uniform(0.5, 1.5) * pause)
            pause = min(pause * 2, POLL_SECONDS[1])

    def enter_sync(self) -> None:
        if self.held:  # this process holds it: nothing can wait for it here
            self.users += 1
            return
        deadline = time.monotonic() + SYNC_WAIT_SECONDS
        pause = POLL_SECONDS[0]
        while not self._join():
            if time.monotonic() > deadline:
                raise Conflict(
                    f"{self.store.store.describe}: the world's write lock stayed held by another"
                    f" process for {SYNC_WAIT_SECONDS:g} s; nothing of this was kept"
                )
            time.sleep(random.uniform(0.5, 1.5) * pause)
            pause = min(pause * 2, POLL_SECONDS[1])

    def exit(self, flush: bool = False) -> None:
        """Leave the hold; with ``flush``, then wait until this session's commits are on
        disk (after the lock is given back, when this is the last to leave)."""
        self.users -= 1
        if self.users == 0 and self.held:
            self.held = False
            try:
                self.store.release(flush)
            except StoreError as exc:  # the connection broke: the lock went with it
                if flush:  # and whether the commit reached the disk is not known
                    raise
                log.warning("could not give back the world's write lock: %s", exc)
        elif flush:
            self.store.flush()


class _Unflushed:
    """Writes of a unit of work run under the write lock, committed but not yet waited for
    on disk (the flush comes after the lock is given back)."""

    writes = 0


_unflushed: ContextVar[_Unflushed | None] = ContextVar("mockserver_unflushed", default=None)


class _Batch:
    """The requests that wait for one catch-up, with their rate-limit identities."""

    def __init__(self, done: asyncio.Future[list[tuple[str, float, int] | None]]) -> None:
        self.done = done
        self.identities: list[str | None] = []
        self.hits: dict[str, int] = {}  # identity -> requests of it in the batch

    def join(self, identity: str | None) -> int:
        self.identities.append(identity)
        if identity is not None:
            self.hits[identity] = self.hits.get(identity, 0) + 1
        return len(self.identities) - 1

    def counts(self, after: dict[str, tuple[float, int]]) -> list[tuple[str, float, int] | None]:
        """Each request's (identity, window start, count with it): the requests of one
        identity counted in the order they joined, up to the count the store returned."""
        seen: dict[str, int] = {}
        result: list[tuple[str, float, int] | None] = []
        for identity in self.identities:
            if identity is None:
                result.append(None)
                continue
            start, total = after[identity]
            before = total - self.hits[identity]
            seen[identity] = seen.get(identity, 0) + 1
            result.append((identity, start, before + seen[identity]))
        return result


def _order(item: tuple[DocKey, Any]) -> tuple[int, int]:
    """Records in insertion order (their ``_seq``), after every other document."""
    key, value = item
    if key[0] == "rec" and isinstance(value, dict):
        return 1, int(value.get("_seq", 0))
    return 0, 0


def retrying_sync(rt: Runtime, work: Callable[[], T]) -> T:
    """Run ``work`` (a transaction); after a conflict, again under the world's write lock."""
    try:
        return work()
    except Conflict:
        if rt.replica is None:
            raise
    for attempt in range(LOCKED_ATTEMPTS):
        with rt.replica.writing_sync():
            try:
                return work()
            except Conflict:
                if attempt == LOCKED_ATTEMPTS - 1:
                    raise
    raise AssertionError("unreachable")


async def retrying(rt: Runtime, work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` (a transaction that may await); after a conflict, again under the world's
    write lock, caught up (so that it cannot conflict again)."""
    try:
        return await work()
    except Conflict:
        if rt.replica is None:
            raise
    for attempt in range(LOCKED_ATTEMPTS):
        async with rt.replica.writing():
            try:
                return await work()
            except Conflict:
                if attempt == LOCKED_ATTEMPTS - 1:
                    raise
    raise AssertionError("unreachable")


__all__ = ["Replica", "StoreError", "retrying", "retrying_sync"]
