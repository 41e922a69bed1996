"""A runtime's world kept in a SQL store: written through at every commit, caught up at the
start of every unit of work.

- **Writing.** Every transaction that changed the world (``Runtime.on_commit``) writes the
  documents it named, with their values as they are at its end, before it commits in memory
  and so before the response is built and sent. The write moves the world's revision on. It
  is checked against the writes other processes made since the revision this process knows,
  as :class:`~mockserver.store.base.Write` says (:meth:`_write` decides which): all of them
  when the transaction read an index; none but appends otherwise; and appends (a create: new
  documents and numbers only) are not checked against each other. When one came first, the
  write fails with :class:`~mockserver.store.base.Conflict`, nothing is written, and the
  transaction is undone. Each process numbers ids and ``seq`` with a slot of its own
  (``World.number``), so that appends of several processes do not take the same numbers.
- **Catching up.** Each unit of work (an API or control request, a heartbeat tick, a
  delivery step) starts by reading what other processes wrote since this one last looked
  (one statement: usually nothing). A SQLite file has one process, so there is never
  anything to read.
- **Conflicts.** A unit of work whose write conflicted runs again holding the world's write
  lock (:meth:`Replica.locked`): a PostgreSQL advisory lock awaited on a connection of its
  own, so that the event loop goes on (other requests are served) while it waits in the
  database, where waiting costs no CPU. Taking it catches up in the same round trip; the unit
  of work runs, writes, and gives the lock back. Units of work that conflicted so queue for
  the lock instead of colliding again with each other. A first, optimistic write of another
  process may still land during a locked run: that run then takes the guard (first writes
  fail while it is held, and queue for the lock in turn), catches up and runs again, and
  cannot conflict. So no write is refused because another process wrote first:
  :func:`retrying`. A unit of work that cannot await (a tick, a delivery step) takes no lock
  and runs again caught up (:func:`retrying_sync`).

Runtime state outside the tree is written with the transaction that changed it, as documents
of its own: ``("meta", "clock")`` (the manual clock's time), ``("meta", "faults")``,
``("meta", "rate-limit")`` (a limit set through the control plane, or None) and, for a
store other processes share, ``("meta", "due")`` (the scheduler's next due time). Rate buckets
of a shared store are rows of their own (the rate limiter counts them there).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from mockserver.platform.clock import Clock
from mockserver.platform.documents import COMMUTING, DocKey, place
from mockserver.platform.ratelimit import WINDOW_SECONDS, Counted
from mockserver.store.base import Changes, Conflict, Delta, JournalRow, Row, StoreError, Write
from mockserver.store.sql import SqlWorld

if TYPE_CHECKING:
    from mockserver.world import World

log = logging.getLogger("mockserver")
UNKNOWN = -1
RATE_LIMIT: DocKey = ("meta", "rate-limit")
UNWRITTEN = object()  # a runtime document the store does not hold yet
T = TypeVar("T")
OPTIMISTIC_ATTEMPTS = 3  # runs outside the lock, each caught up after the last conflicted
LOCKED_ATTEMPTS = 10  # runs under the write lock (a second when a first, optimistic write of
# another process landed in the first; more only when a tick or delivery step did, or the
# lock was lost with its connection: the server restarted, say)
SYNC_ATTEMPTS = (
    100  # runs of a unit of work that cannot await (it takes no lock: see retrying_sync)
)
JOIN_SECONDS = 0.010  # a unit of work joins this process's hold of the lock while it is younger
BUSY_SECONDS = 1.0  # other processes wrote to the world within this long: its writes contend
SLOTS = 64  # processes of one world that number without colliding (World.number)


class Host(Protocol):
    """What a replica keeps for (runtime.py's Runtime): the world, and the runtime's state
    outside it, as documents."""

    @property
    def world(self) -> World: ...

    def replace_world(self, data: dict[str, Any]) -> None:
        """Take a whole world read from the store (outside any transaction)."""
        ...

    def runtime_documents(self, shared: bool) -> dict[DocKey, Any]:
        """The runtime state outside the world as it is now, as documents (the ``meta`` ones
        of the module's description; ``shared``: with the scheduler's next due time)."""
        ...

    def learned(self, documents: dict[DocKey, Any]) -> None:
        """Take runtime documents another process wrote (or the store held at start)."""
        ...

    def number_worlds(self, slots: int, slot: int) -> None:
        """Number the world, and every later one, with ``slot`` of ``slots`` (World.number)."""
        ...


class Replica:
    """The world of ``host`` written through to ``store`` (see the module): the store's
    implementation of :class:`~mockserver.store.base.Persistence`."""

    def __init__(self, host: Host, store: SqlWorld, clock: Clock) -> None:
        self.host = host
        self.store = store
        self.clock = clock
        self.shared = store.shared
        self.rev = 0
        self.epoch = UNKNOWN
        self._written: dict[DocKey, Any] = {}  # runtime documents as the store has them
        self._turn: _Turn | None = None  # this turn of the event loop's round trip
        self._lock = _WriteLock(store)
        self._others_at = -BUSY_SECONDS  # when it last found that others had written
        if self.shared:
            # A slot of its own, so that its ids and sequence numbers do not collide with
            # another process's (past SLOTS processes a slot is shared: a collision then is a
            # conflict, not a duplicate, as created documents are written only where none is).
            store.ensure()
            host.number_worlds(SLOTS, store.slot(SLOTS))
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
            self._write(Changes(frozenset(), frozenset(), False, replaced=True))
        except Conflict:  # another process started on the same store at the same moment
            self._apply(self.store.whole())

    # -- catching up -------------------------------------------------------------------------

    def catch_up(self) -> None:
        """Before a unit of work: bring this process's world up to what the store holds
        (others' writes; a SQLite file has no others)."""
        if self.shared:
            self._apply_delta(self.store.catch_up(self.rev, self.epoch))

    async def catch_up_together(self, identity: Callable[[], str | None]) -> Counted | None:
        """:meth:`catch_up` for an API request, made once for every request that reaches this
        point in the same turn of the event loop (those that arrived together), in the turn's
        one round trip (:meth:`journal`): one statement catches up and counts each of them
        (``identity``: its rate-limit identity, or None). Each request is then served on the
        world as of that statement, which was made after it arrived; the answer is its count
        (platform/ratelimit.py), or None. A failure of the store fails each of them."""
        if not self.shared:
            return None
        turn = self._turn_now()
        index = turn.join(identity())
        # shield: a request that goes away (cancelled) does not cancel the others' turn.
        return (await asyncio.shield(turn.caught))[index]

    def journal(self, row: JournalRow) -> asyncio.Future[None]:
        """Journal an answered request (platform/journal.py SharedJournal) in this turn's
        round trip, with the catch-up of the requests that arrived in it: done when written
        (or, the store failing, logged as lost: the answers stand)."""
        turn = self._turn_now()
        turn.journal.append(row)
        return turn.journalled

    def _turn_now(self) -> _Turn:
        turn = self._turn
        if turn is None:
            loop = asyncio.get_running_loop()
            turn = self._turn = _Turn(loop.create_future(), loop.create_future())
            # After the requests already waiting to run in this turn have joined.
            loop.call_soon(self._round_trip, turn)
        return turn

    def _round_trip(self, turn: _Turn) -> None:
        """The turn's one statement: its journal rows, and the catch-up (with rate counts) of
        the requests that joined it; or, when none joined, the rows alone."""
        self._turn = None
        rows = turn.journal
        try:
            if not turn.identities:
                self.store.journal_add(rows)
            elif turn.hits or rows:
                now = self.clock.timestamp()
                delta, after = self.store.catch_up_counting(
                    self.rev, self.epoch, turn.hits, now, WINDOW_SECONDS, rows
                )
                self._apply_delta(delta)
            else:
                delta, after = self.store.catch_up(self.rev, self.epoch), {}
                self._apply_delta(delta)
        except BaseException as exc:  # the store failed: every request of the turn answers so
            if rows:
                log.error("%d requests not journalled: %s", len(rows), exc)
            turn.journalled.set_result(None)
            if turn.identities:
                turn.caught.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
            return
        turn.journalled.set_result(None)
        if turn.identities:
            turn.caught.set_result(turn.counts(after))

    def _apply_delta(self, delta: Delta | None) -> None:
        if delta is not None:
            self._apply(delta)

    def _apply(self, delta: Delta) -> None:
        host = self.host
        learned: dict[DocKey, Any] = {}
        if delta.whole:
            tree: dict[str, Any] = {}
            for row in sorted(delta.rows, key=_loading_order):
                if row.key[0] == "meta":
                    learned[row.key] = row.value
                else:
                    place(tree, row.key, row.value)
            host.replace_world(tree)
            self._written = {}
            learned.setdefault(RATE_LIMIT, None)  # a whole world without one: the start-up limit
        else:
            if delta.rows:
                self._others_at = time.monotonic()
            world = host.world
            for row in delta.rows:
                if row.key[0] == "meta":
                    learned[row.key] = row.value
                elif row.value is None:
                    world.drop_document(row.key)
                else:
                    world.put_document(row.key, row.value)
        self.rev, self.epoch = delta.rev, delta.epoch
        if not self.shared:  # the due time is a shared store's (the file's one process ticks)
            learned.pop(("meta", "due"), None)
        if learned:
            self._written.update(learned)
            host.learned(learned)

    # -- the world's write lock ----------------------------------------------------------------

    async def locked(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` (a transaction) holding the world's write lock, caught up under it,
        so that it does not conflict with another process's writing unit of work (taking the
        lock catches up in the same round trip; joining this process's hold needs none). The lock
        is awaited (waiting in the database, the event loop free) and shared with this
        process's other units of work that need it at the same time. The write commits under
        the lock; it is waited for on disk after the lock is given back, so that the lock is
        held for no flush. Its runs outside the lock conflicted."""
        taken = await self._lock.enter(self)
        pending = _Unit(held=True)
        token = _unit.set(pending)
        try:
            for attempt in range(LOCKED_ATTEMPTS):
                if not taken or attempt:
                    self.catch_up()
                try:
                    return await work()
                except Conflict:
                    if attempt == LOCKED_ATTEMPTS - 1:
                        raise
                    await self._lock.guard()
            raise AssertionError("unreachable")
        finally:
            _unit.reset(token)
            await self._lock.exit(wrote=pending.writes > 0)

    # -- writing -----------------------------------------------------------------------------

    def committed(self, changes: Changes) -> None:
        """A transaction is ending: write what it changed (a Conflict undoes it)."""
        self._write(changes)

    def keep_runtime_state(self) -> None:
        """Write runtime state changed outside any transaction (a fault used up)."""
        self._write(Changes(frozenset(), frozenset(), False))

    def _write(self, changes: Changes) -> None:
        whole, changed = changes.replaced, changes.changed
        runtime = self._runtime_changes(whole)
        world = self.host.world
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
        unit = _unit.get()
        # Others wrote lately (or this process holds the write lock because they did): the
        # world's row is not kept locked while the disk is written, and a unit of work that
        # can await waits for the disk after its write, awaited (:meth:`flushed`).
        contended = (unit is not None and unit.held) or (
            time.monotonic() - self._others_at < BUSY_SECONDS
        )
        flush = unit is None or whole or not contended
        serial = whole or changes.read_an_index
        created = frozenset(key for key in changes.created if key[0] not in COMMUTING)
        appends = (
            not serial
            and not runtime
            and all(key in created or key[0] in COMMUTING for key in changed)
        )
        written, self.epoch = self.store.write(
            Write([*docs, *runtime.items()], whole, created, serial, appends),
            self.rev,
            self.epoch,
            flush,
            contended,
            unit is not None and not unit.held,
        )
        if written == self.rev + 1:
            self.rev = written
        else:  # others' writes came between (appends, or passed by one): caught up later
            self._others_at = time.monotonic()
        if not flush:
            unit.writes += 1  # type: ignore[union-attr]
        self._written.update(runtime)

    def _runtime_changes(self, whole: bool) -> dict[DocKey, Any]:
        """The runtime documents that differ from what the store has (all of them: whole)."""
        written = self._written
        return {
            key: value
            for key, value in self.host.runtime_documents(self.shared).items()
            if whole or written.get(key, UNWRITTEN) != value
        }

    # -- running units of work ---------------------------------------------------------------

    def retrying_sync(self, work: Callable[[], T]) -> T:
        """Run ``work`` (a transaction that cannot await: a tick, a delivery step); after a
        conflict, catch up and run it again. It takes no lock (waiting for one would block the
        event loop): its run is short, and writing units of work of other processes, which
        write only under the world's write lock, rarely land in it."""
        for attempt in range(SYNC_ATTEMPTS):
            try:
                return work()
            except Conflict:
                if attempt == SYNC_ATTEMPTS - 1:
                    raise
                self.catch_up()
        raise AssertionError("unreachable")

    async def retrying(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` (a transaction that may await) on the world as this process knows it;
        after a conflict, caught up, again, up to OPTIMISTIC_ATTEMPTS runs in all; then under
        the world's write lock (:meth:`locked`), so that it does not conflict again."""
        for attempt in range(OPTIMISTIC_ATTEMPTS):
            unit = _Unit(held=False)
            token = _unit.set(unit)
            try:
                result = await work()
            except Conflict:
                if attempt < OPTIMISTIC_ATTEMPTS - 1:
                    self.catch_up()
                continue
            finally:
                _unit.reset(token)
            if unit.writes:
                await self.store.flushed()
            return result
        return await self.locked(work)


class _WriteLock:
    """This process's hold of one world's write lock (a session-level advisory lock of a
    connection of its own, store/postgres.py), shared by every unit of work of the process
    that needs it at the same time: taken by the first, given back when the last leaves. A
    hold older than JOIN_SECONDS takes no one new, so other processes get their turn (they
    wait for it in the database, in arrival order). Only one unit of work at a time takes it
    or gives it back; the others wait for that (``change``) and look again."""

    def __init__(self, store: SqlWorld) -> None:
        self.store = store
        self.users = 0
        self.held = False
        self.since = 0.0
        self.wrote = False  # a unit of work of this hold wrote: the release flushes
        self.change: asyncio.Future[None] | None = None  # it is being taken or given back
        # The end of this hold: None, or what made its release (and flush) fail.
        self.released: asyncio.Future[BaseException | None] | None = None
        self.late: asyncio.Future[None] | None = None  # a release for a request gone away
        self.guarded = False  # the guard is taken for this hold

    async def enter(self, replica: Replica) -> bool:
        """Join this process's hold (False), or take the lock and bring ``replica`` up to
        what the store holds under it (True)."""
        while True:
            if self.change is not None:
                await asyncio.shield(self.change)
            elif self.held and time.monotonic() - self.since < JOIN_SECONDS:
                self.users += 1
                return False
            elif self.held:
                assert self.released is not None
                await asyncio.shield(self.released)
            else:
                await self._take(replica)
                return True

    async def _take(self, replica: Replica) -> None:
        loop = asyncio.get_running_loop()
        change = self.change = loop.create_future()
        rev, epoch = replica.rev, replica.epoch
        taking = asyncio.ensure_future(self.store.hold(rev, epoch))
        try:
            await asyncio.shield(taking)
        except asyncio.CancelledError:  # the request went away: give the lock back once taken
            taking.add_done_callback(self._give_back_late)
            raise
        finally:
            self.change = None
            change.set_result(None)
        self.held, self.since, self.users = True, time.monotonic(), 1
        self.released = loop.create_future()
        delta = taking.result()
        if (replica.rev, replica.epoch) == (rev, epoch):
            if delta is not None:
                replica._apply(delta)
        elif (
            delta is not None
            and not delta.whole
            and delta.epoch == replica.epoch
            and delta.rev >= replica.rev
        ):
            replica._apply(delta)  # every document changed since ``rev``, as of a later revision
        else:  # this process caught up or wrote while it waited, past what was read: again
            replica.catch_up()

    def _give_back_late(self, taking: asyncio.Future[Delta | None]) -> None:
        if not taking.cancelled() and taking.exception() is None:
            self.held, self.users, self.since = True, 1, 0.0
            self.released = asyncio.get_running_loop().create_future()
            self.late = asyncio.ensure_future(self.exit(wrote=False))

    async def guard(self) -> None:
        """A run under this hold conflicted with a first write of another process: take the
        guard, so that the next one cannot."""
        if not self.guarded:
            await self.store.guard()
            self.guarded = True

    async def exit(self, wrote: bool) -> None:
        """Leave the hold. A unit of work that wrote waits until the lock is given back and
        its write is on disk (the last to leave flushes for every one of the hold)."""
        self.wrote = self.wrote or wrote
        self.users -= 1
        released = self.released
        assert released is not None
        if self.users > 0:
            if wrote:
                failure = await asyncio.shield(released)
                if failure is not None:
                    raise StoreError(str(failure)) from failure
            return
        flush, self.wrote = self.wrote, False
        change = self.change = asyncio.get_running_loop().create_future()
        failure: BaseException | None = None
        try:
            await asyncio.shield(asyncio.ensure_future(self.store.release(flush)))
        except StoreError as exc:  # the connection broke: the lock went with it
            failure = exc
        finally:
            self.held, self.change, self.guarded = False, None, False
            change.set_result(None)
            released.set_result(failure)
        if failure is not None:
            if flush:  # whether the commits reached the disk is not known
                raise failure
            log.warning("could not give back the world's write lock: %s", failure)


class _Unit:
    """A unit of work that can await (:func:`retrying`): whether it runs under the world's
    write lock (``held``), and its writes committed but not yet waited for on disk (awaited
    after it; under the lock, after the lock is given back)."""

    def __init__(self, held: bool) -> None:
        self.held = held
        self.writes = 0


_unit: ContextVar[_Unit | None] = ContextVar("mockserver_unit", default=None)


class _Turn:
    """One turn of the event loop's round trip to the store: the requests that wait for its
    catch-up, with their rate-limit identities, and the journal rows of those answered."""

    def __init__(
        self,
        caught: asyncio.Future[list[Counted | None]],
        journalled: asyncio.Future[None],
    ) -> None:
        self.caught = caught
        self.journalled = journalled
        self.identities: list[str | None] = []
        self.hits: dict[str, int] = {}  # identity -> requests of it in the turn
        self.journal: list[JournalRow] = []

    def join(self, identity: str | None) -> int:
        self.identities.append(identity)
        if identity is not None:
            self.hits[identity] = self.hits.get(identity, 0) + 1
        return len(self.identities) - 1

    def counts(self, after: dict[str, tuple[float, int]]) -> list[Counted | None]:
        """Each request's (identity, window start, count with it): the requests of one
        identity counted in the order they joined, up to the count the store returned."""
        seen: dict[str, int] = {}
        result: list[Counted | None] = []
        for identity in self.identities:
            if identity is None:
                result.append(None)
                continue
            start, total = after[identity]
            before = total - self.hits[identity]
            seen[identity] = seen.get(identity, 0) + 1
            result.append((identity, start, before + seen[identity]))
        return result


def _loading_order(row: Row) -> tuple[int, int]:
    """A whole world's documents in the order they are placed: records last, in ``_seq``
    order (each collection's paging order: records that processes made at the same time
    were written in the order they committed), the others in the order they first appeared."""
    if row.key[0] == "rec" and isinstance(row.value, dict):
        return 1, int(row.value.get("_seq", 0))
    return 0, row.ord


def _order(item: tuple[DocKey, Any]) -> tuple[int, int]:
    """Records in insertion order (their ``_seq``), after every other document."""
    key, value = item
    if key[0] == "rec" and isinstance(value, dict):
        return 1, int(value.get("_seq", 0))
    return 0, 0


__all__ = ["Host", "Replica", "StoreError"]
