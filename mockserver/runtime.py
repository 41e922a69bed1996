"""One running mock: its settings, contract, clock, world and the cross-cutting services."""

from __future__ import annotations

import contextlib
import os
import secrets as secrets_
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from mockserver.contract import Contract, default_contract
from mockserver.fixtures import build_world, load_fixtures
from mockserver.platform.clock import Clock, ManualClock, make_clock, parse_time
from mockserver.platform.cursors import CursorCodec
from mockserver.platform.delivery import DeliveryWorker
from mockserver.platform.delivery.worker import Attempting
from mockserver.platform.documents import DocKey
from mockserver.platform.envelope import iso_z
from mockserver.platform.faults import Fault, Faults
from mockserver.platform.idempotency import Idempotency
from mockserver.platform.journal import Journal, SharedJournal
from mockserver.platform.jsonbody import JsonReader
from mockserver.platform.ratelimit import RateLimiter
from mockserver.platform.scheduler import Scheduler
from mockserver.platform.secretbox import SecretBox
from mockserver.platform.transactions import Transaction, active, clone, transaction
from mockserver.platform.validation import OperationValidator, compile_all
from mockserver.seams import Seams
from mockserver.settings import Settings
from mockserver.store.base import Changes, Persistence, StoreError
from mockserver.store.memory import InMemory
from mockserver.store.replica import RATE_LIMIT, Replica
from mockserver.store.sql import SqlWorld
from mockserver.world import World

DEFAULT_START = "2026-11-20T09:00:00Z"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Commit:
    """What one transaction is about to keep (platform/documents.py names the documents)."""

    world: World  # the world after the transaction
    changed: frozenset[DocKey]  # documents created, changed or deleted
    deleted: frozenset[DocKey]  # those of ``changed`` that are gone
    replaced: bool  # a reset or restore replaced the whole world: every document is new


CommitListener = Callable[[Commit], None]


def data_key(store: SqlWorld | None) -> bytes | None:
    """The key that seals secrets at rest: ``MOCKSERVER_DATA_KEY`` when set; else, with a
    store, one kept in it (so sealed secrets open after a restart and in every worker); else
    None (this process makes its own)."""
    if os.environ.get("MOCKSERVER_DATA_KEY") or store is None:
        return None
    from cryptography.fernet import Fernet  # here: without a store, none at start-up

    return store.secret("data", Fernet.generate_key)


class Runtime:
    """One world with everything that acts on it: the default mock, or one sandbox.

    A sandbox (sandboxes.py) passes the parts it shares with the default runtime: the parsed
    contract, its compiled validators, the data key and the seams (seams.py); and its own
    fixtures.
    """

    def __init__(
        self,
        settings: Settings | None = None,
        contract: Contract | None = None,
        *,
        fixtures: dict[str, Any] | None = None,
        validators: dict[str, OperationValidator] | None = None,
        secrets: SecretBox | None = None,
        start: datetime | None = None,
        seams: Seams | None = None,
        store: SqlWorld | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self.store = store
        self.seams = seams or Seams()
        self.contract = contract or default_contract()
        self.fixtures = fixtures if fixtures is not None else load_fixtures(self.settings.fixtures)
        self.start = start or parse_time(self.fixtures.get("clock", {}).get("start", DEFAULT_START))
        self.clock: Clock = make_clock(self.settings.clock, self.start)
        self._numbering = (1, 0)  # a single process's: see number_worlds
        self._id_key = self._kept_secret("ids", lambda: secrets_.token_bytes(16))
        self._pristine: World | None = None  # the fixtures' world, kept for resets
        self.world: World = self._new_world()
        limits = self.contract.limits
        self.cursors = CursorCodec(
            self.clock,
            int(limits["cursorLifetimeSeconds"]),
            self._kept_secret("cursor", lambda: secrets_.token_bytes(32)),
            open_cursor=self.seams.open_cursor,
        )
        self.rate = RateLimiter(
            self.settings.rate_limit or self.contract.rate_limit_per_minute,
            self.clock,
            shared=store if store is not None and store.shared else None,
        )
        self.idempotency = Idempotency(
            lambda: self.world,
            self.clock,
            int(limits["idempotencyKeyRetentionSeconds"]),
            lambda when: self.scheduler.due(when),
        )
        self.secrets = secrets or SecretBox(data_key(store))
        self.faults = Faults()
        reader = JsonReader(limits)
        self.journal: Journal = Journal(reader)
        self.persistence: Persistence = InMemory()  # a store's replica once the rest is built
        self.validators: dict[str, OperationValidator] = validators or compile_all(self.contract)
        self.scheduler = Scheduler(self.clock, self.unit_of_work, self)  # tickers get self
        self.clock.on_change(lambda _now: self.scheduler.tick(force=True))
        self.delivery = self._delivery_worker()  # started by the app (or sandbox) in its loop
        self.clock.on_change(lambda _now: self.delivery.wake())
        self.sandboxes: Any = None  # the default runtime's SandboxManager (sandboxes.py)
        self._commit_listeners: list[CommitListener] = []
        if store is not None:
            replica = self.persistence = Replica(self, store, self.clock)
            if store.shared:
                self.journal = SharedJournal(reader, store, replica.journal)
        if store is not None and not store.shared:
            with self.transaction():  # this process is the file's only one
                self.delivery.release_claims()

    def _delivery_worker(self) -> DeliveryWorker:
        attempting = Attempting(
            self.contract.limits["webhookDelivery"],
            message=self.seams.delivery_message,
            retry_status=self.seams.retry_status,
            open_secret=self.secrets.open,
            allow_private=self.settings.allow_private_callbacks,
            lease=self.settings.delivery_lease,
        )
        return DeliveryWorker(
            attempting,
            self.clock,
            lambda: self.world,
            self.unit_of_work,
            self.catch_up,
            stored=self.store is not None,
        )

    def _kept_secret(self, name: str, make: Callable[[], bytes]) -> bytes | None:
        """A key kept with the world when a store holds it (so cursors and ids outlive the
        process, and every worker signs alike); None: this process makes its own."""
        return self.store.secret(name, make) if self.store is not None else None

    def _keyed(self, world: World) -> World:
        if self._id_key is not None and self.settings.seed is None:
            world.ids.rekey(self._id_key)
        world.number(*self._numbering)
        return world

    def number_worlds(self, slots: int, slot: int) -> None:
        """Number this world and every later one with ``slot`` of ``slots`` (World.number):
        the slot a shared store gave this process."""
        self._numbering = (slots, slot)
        self.world.number(slots, slot)

    def _new_world(self) -> World:
        return self._keyed(build_world(self.fixtures, seed=self.settings.seed, seams=self.seams))

    def _world_as_built(self) -> World:
        """A world holding exactly the fixtures, as :meth:`_new_world` builds it, copied from one
        built at the first reset and kept untouched (a reset then costs a copy of the tree,
        about a quarter of building it again)."""
        if self._pristine is None:
            self._pristine = build_world(self.fixtures, seed=self.settings.seed, seams=self.seams)
        world = self.seams.world(clone(self._pristine.data), seed=self.settings.seed)
        return self._keyed(world)

    def replace_world(self, data: dict[str, Any]) -> None:
        """Take a whole world read from a store (outside any transaction)."""
        self.world = self._keyed(self.seams.world(data, seed=self.settings.seed))

    def runtime_documents(self, shared: bool) -> dict[DocKey, Any]:
        """The state outside the world that a store keeps with it, as documents
        (store/replica.py): the manual clock's time, the faults, a limit set through the
        control plane, and (``shared``: other processes tick too) the scheduler's next due
        time."""
        documents: dict[DocKey, Any] = {
            ("meta", "faults"): self.faults.dump(),
            RATE_LIMIT: self.rate.changed_limit,
        }
        if isinstance(self.clock, ManualClock):
            documents["meta", "clock"] = iso_z(self.clock.now())
        if shared:
            documents["meta", "due"] = self.scheduler.next_due
        return documents

    def learned(self, documents: dict[DocKey, Any]) -> None:
        """Take the documents of :meth:`runtime_documents` that another process wrote."""
        for key, value in documents.items():
            if key == ("meta", "clock") and isinstance(self.clock, ManualClock) and value:
                self.clock.rewind(parse_time(value))
            elif key == ("meta", "faults") and value is not None:
                self.faults.load(value)
            elif key == RATE_LIMIT:
                self.rate.set_limit(value)
            elif key == ("meta", "due"):
                self.scheduler.next_due = value

    def catch_up(self) -> None:
        """Before a unit of work (a request, a tick, a delivery step): with a store other
        processes share, bring in what they wrote (store/replica.py)."""
        self.persistence.catch_up()

    def take_fault(self, operation_id: str | None, path: str) -> Fault | None:
        """The first live fault matching a request, used up by one (kept in the store, so
        that a fault for N requests fires N times across every process)."""
        if not self.faults.rules:
            return None
        persistence = self.persistence

        def take() -> Fault | None:
            before = self.faults.dump()
            fault = self.faults.take(operation_id, path)
            if fault is not None:
                try:
                    persistence.keep_runtime_state()
                except StoreError:
                    self.faults.load(before)
                    raise
            return fault

        return persistence.retrying_sync(take)

    def unit_of_work(self, work: Callable[[], T]) -> T:
        """Run ``work`` (it cannot await: a tick, a delivery step) in one transaction; after
        a conflict with another process's write to the store, caught up, again
        (store/replica.py: ``retrying_sync``). The services' ``unit_of_work``
        (platform/transactions.py: ``UnitOfWork``)."""

        def once() -> T:
            with self.transaction():
                return work()

        return self.persistence.retrying_sync(once)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """One unit of change: every change to the state inside it is kept, or none is.

        Besides the world's records (platform/transactions.py), a failure also puts back the
        world itself (a reset or restore replaces it) and the manual clock's time. Joins the
        transaction already open in this context. The outermost one tells the
        :meth:`on_commit` listeners what it changed.
        """
        if active() is not None:
            yield
            return
        world = self.world
        moment = self.clock.now() if isinstance(self.clock, ManualClock) else None
        try:
            with transaction() as tx:
                yield
                if self._commit_listeners:
                    self._committing(tx, world)
                # The store, last: its write may fail (Conflict).
                changes = Changes(
                    frozenset(tx.changed()),
                    frozenset(tx.created()),
                    tx.membership,
                    self.world is not world,
                )
                self.persistence.committed(changes)
        except BaseException:
            self.world = world
            if moment is not None and self.clock.now() != moment:
                self.clock.rewind(moment)
            raise

    def on_commit(self, listener: CommitListener) -> Callable[[], None]:
        """Call ``listener`` at the end of every transaction that changed the world, before
        its changes are kept: where a store writes them. An exception it raises fails the
        transaction (every change undone, the caller sees the error). Returns the function
        that removes the listener."""
        self._commit_listeners.append(listener)
        return lambda: self._commit_listeners.remove(listener)

    def _committing(self, tx: Transaction, before: World) -> None:
        changed = tx.changed()
        replaced = self.world is not before
        if not changed and not replaced:
            return
        commit = Commit(self.world, frozenset(changed), frozenset(tx.deleted()), replaced)
        for listener in tuple(self._commit_listeners):
            listener(commit)

    def reset(self) -> None:
        """State back to the fixtures: records, credits, keys, clock (manual), limits, faults."""
        self.world = self._world_as_built()
        if isinstance(self.clock, ManualClock):
            self.clock.set(self.start)
        self.rate.reset()
        self.rate.set_limit(None)
        self.faults.clear()
        self.journal.clear()
        self.scheduler.tick(force=True)

    def restore(self, data: dict[str, Any]) -> None:
        """Replace the whole state with a snapshot (``PUT /_mock/snapshot``)."""
        self.world = self._keyed(self.seams.world(data, seed=self.settings.seed))
        if isinstance(self.clock, ManualClock) and "clock" in data:
            self.clock.set(parse_time(data["clock"]))
        self.rate.reset()
        self.scheduler.tick(force=True)

    def snapshot(self, copy: bool = True) -> dict[str, Any]:
        """The whole state and the clock, as ``GET /_mock/snapshot`` answers it: a deep copy,
        or the state's own containers (``World.snapshot``)."""
        data = self.world.snapshot(copy)
        data["clock"] = self.clock.now().isoformat().replace("+00:00", "Z")
        return data
