"""The shared store: PostgreSQL (``--store postgresql://...``), for many workers and replicas.

Every process keeps the world in memory and the database is the truth they share. Each
request first reads what other processes wrote since this one last looked (one statement:
usually nothing), then runs in memory; each transaction that changed something writes its
documents in one statement that moves the world's revision on, and fails (nothing written)
when a write it must follow came first (base.Write: every write, for one that read an index;
none but appends, for the others): the transaction is undone, the process catches up and runs
it again (store/replica.py). Creates (appends) of several processes pass each other. So writes
to one world are serialisable across every process: an Idempotency-Key executes once, credits
are never spent twice. Rate buckets are rows counted by one statement.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mockserver.platform.documents import COMMUTING
from mockserver.store.base import JournalRow, StoreError, Write
from mockserver.store.sql import (
    ORD_STRIDE,
    UPSERT,
    Dialect,
    SqlStore,
    conflict,
    rows_of,
)

# The world's write lock (store/replica.py): a session-level advisory lock that a process
# takes on a connection of its own, awaited (the event loop goes on while it waits in the
# database, and waiting there costs no CPU), before a writing unit of work catches up, runs
# and writes; given back after the write. Writes check only the world's revisions.
WORLD_LOCK = 0x776C6F63  # "wloc", with the world's hash
# Taking it and catching up under it, in one round trip: a function of the session's own
# (pg_temp), because each statement in a volatile function sees what was committed before it
# ran (a statement's own snapshot is taken before it waits for the lock). Its rows: those of
# sql.CATCH_UP.
HOLD_FUNCTION = (
    "CREATE FUNCTION pg_temp.mock_hold(lock_key integer, world_id text, known bigint)"
    " RETURNS TABLE (rev bigint, epoch bigint, key text, doc text, ord bigint)"
    " LANGUAGE plpgsql VOLATILE AS $$ BEGIN"
    " PERFORM pg_advisory_lock(lock_key, hashtext(world_id));"
    " RETURN QUERY SELECT w.rev, w.epoch, d.key, d.doc::text, d.ord FROM worlds w"
    " LEFT JOIN docs d ON d.world = w.id AND d.rev > known WHERE w.id = world_id ORDER BY d.ord;"
    " END $$"
)
HOLD = "SELECT * FROM pg_temp.mock_hold(%s, %s, %s)"
# The lock given back, then (a statement of its own: its commit waits for the disk) the log
# flushed up to here, so up to every commit before it (FLUSH below): the lock is not held
# while the disk is written.
# (The lock and, when it was taken, the guard below: every advisory lock of that session.)
RELEASE = "SELECT pg_advisory_unlock_all()"
RELEASE_FLUSHED = (
    "SELECT pg_advisory_unlock_all(),"
    " set_config('synchronous_commit', 'on', true), pg_logical_emit_message(true, 'mockserver', '')"
)
# The guard: taken by the holder of the world's write lock when a run under it conflicted
# anyway (a first, optimistic write of another process landed in it). While it is held, first
# writes (GUARDED) fail as conflicts without waiting, so the next run under the lock cannot
# conflict. Held rarely and briefly, it costs the other writes nothing else.
GUARD_LOCK = 0x67726469  # "grdi", with the world's hash
GUARD = "SELECT pg_advisory_lock(%s, hashtext(%s))"
GUARDED = " AND pg_try_advisory_xact_lock_shared(%(guard)s, hashtext(%(world)s))"


# One transaction's documents in one statement: the revision moved on (failing when a write
# it must follow came first: nothing is written), the rows upserted. A world has two
# revisions: ``rev`` moves at every write, ``mrev`` at every write that is not an append
# (base.Write): a serial write finds ``rev`` where the process knew it, any other finds no
# write but appends since then (``mrev`` no later). The rows take the revision the statement
# gave (appends of several processes pass each other). The documents the transaction created
# are written only where there is none (or a deleted one), and every one must be: else
# another process made it first, a conflict. The counters that commute keep the greatest
# value written. Committed without waiting for the disk, so that the world's row is locked
# only for the statement, never for a flush; FLUSH then waits for it (below).
CHECK = {True: "rev = %(rev)s", False: "mrev <= %(rev)s"}  # [serial]
MOVE = {True: "rev = rev + 1, mrev = rev + 1", False: "rev = rev + 1"}  # [moves mrev]
GROWS = " OR ".join(f"docs.key LIKE '[\"{kind}\"%%'" for kind in sorted(COMMUTING))
ROWS = (
    " SELECT %(world)s, t.k, b.rev * " + str(ORD_STRIDE) + " + t.o, b.rev, t.d FROM bumped b,"
    " unnest(%(keys)b::text[], %(ords)b::bigint[], %(docs)b::text[], %(created)b::bool[])"
    " AS t(k, o, d, c)"
)


def _written(serial: bool, appends: bool, guarded: bool) -> str:
    guard = GUARDED if guarded else ""
    return (
        " bumped AS (UPDATE worlds SET " + MOVE[not appends] + " WHERE id = %(world)s"
        " AND " + CHECK[serial] + guard + " RETURNING rev),"
        " written AS (INSERT INTO docs (world, key, ord, rev, doc)" + ROWS + " WHERE NOT t.c"
        " ON CONFLICT (world, key) DO UPDATE SET rev = excluded.rev, doc = CASE"
        " WHEN " + GROWS + " THEN greatest(docs.doc::bigint, excluded.doc::bigint)::text"
        " ELSE excluded.doc END),"
        " created AS (INSERT INTO docs (world, key, ord, rev, doc)" + ROWS + " WHERE t.c"
        " ON CONFLICT (world, key) DO UPDATE SET rev = excluded.rev, doc = excluded.doc"
        " WHERE docs.doc IS NULL RETURNING 1)"
    )


# The same committed synchronously, in one round trip (``durable``): when no other process is
# writing to the world, no one waits for its row while the disk is written.
DURABLE = " durable AS (SELECT set_config('synchronous_commit', 'on', true)),"


@functools.cache
def write_statement(serial: bool, appends: bool, guarded: bool, durable: bool) -> str:
    """The write of base.Write's kind [guarded: a first write, checking the guard]. Its row:
    the revision written; a division by zero when it may not be (a conflict)."""
    return (
        "WITH"
        + (DURABLE if durable else "")
        + _written(serial, appends, guarded)
        + " SELECT 1 / count(*), max(b.rev),"
        " 1 / ((SELECT count(*) FROM created) = %(n_created)s)::int FROM bumped b"
        + (", durable" if durable else "")
    )


# Wait until the write-ahead log is on disk up to this statement, and so up to every commit
# before it (of any session: the log is one sequence): a transaction that writes a record to
# the log (an empty logical message) and commits synchronously. Concurrent flushes of every
# session share one write of the disk (group commit), and no lock is held while they wait.
FLUSH = (
    "SELECT set_config('synchronous_commit', 'on', true),"
    " pg_logical_emit_message(true, 'mockserver', '')"
)

# A whole world's revision bump (both revisions), failing (so that the pipeline's COMMIT
# rolls back) when no row moved.
CHECKED_BUMP = (
    "WITH bumped AS (UPDATE worlds SET rev = %s, mrev = %s, epoch = %s WHERE id = %s"
    " AND rev = %s RETURNING 1) SELECT 1 / count(*) FROM bumped"
)
# A slot of the world for this process (store/replica.py): the world's count of processes
# that took one, modulo the slots. The first process of a world has slot 0; no lock is held,
# so a process that ends keeps nothing taken (a slot shared after a wrap is safe: base.Write).
TAKE_SLOT = "UPDATE worlds SET slots = slots + 1 WHERE id = %(world)s RETURNING slots - 1"


# Requests counted in fixed windows, several identities at once (``n`` requests each): the
# count after them, which may pass the limit (every request past it is refused, and a count
# over the limit refuses the same as limit + 1 would), and the window's start. [after: more
# FROM items: "locked" counts them only once the journal's lock is held, below]
def _rate_hits(after: str = "") -> str:
    return (
        "INSERT INTO rate_buckets AS b (world, identity, window_start, count)"
        " SELECT %(world)s, t.i, %(now)s, t.n FROM unnest(%(identities)s::text[],"
        " %(hits)s::bigint[]) AS t(i, n)" + after + " ON CONFLICT (world, identity) DO UPDATE SET"
        " window_start = CASE WHEN %(now)s >= b.window_start + %(window)s THEN %(now)s"
        " ELSE b.window_start END,"
        " count = CASE WHEN %(now)s >= b.window_start + %(window)s THEN excluded.count"
        " ELSE b.count + excluded.count END"
        " RETURNING identity, window_start, count"
    )


RATE_HITS = _rate_hits()
# Journal rows of one turn of a process's loop, in one statement. The world's advisory lock,
# held to the statement's commit, makes the store's numbers follow the commits: a reader that
# saw entry n never later finds an entry below n appear (``after`` loses nothing). A lone row
# is bound as values (~0.1-0.15 ms measured; unnest's arrays cost ~0.25 ms more); several
# as arrays in binary (20 rows: ~0.45 ms; 2 ms as text).
JOURNAL_LOCKED = "locked AS (SELECT pg_advisory_xact_lock(%(lock)s, hashtext(%(world)s)))"
JOURNAL_INSERT = "INSERT INTO journal (world, meta, request_body, response_body)"
JOURNAL_ROWS = {  # [several]
    False: JOURNAL_INSERT + " SELECT %(world)s, %(meta)s, %(request)s, %(response)s FROM locked",
    True: JOURNAL_INSERT + " SELECT %(world)s, t.m, t.q, t.r FROM locked,"
    " unnest(%(metas)b::text[], %(requests)b::bytea[], %(responses)b::bytea[])"
    " WITH ORDINALITY AS t(m, q, r, n) ORDER BY t.n",
}
JOURNAL_ADD = {several: f"WITH {JOURNAL_LOCKED} {rows}" for several, rows in JOURNAL_ROWS.items()}
# The catch-up (sql.CATCH_UP) and the counts of the requests it is made for, in one statement
# (a data-modifying WITH runs once; its rows come back as arrays on every row).
_CAUGHT_UP = (
    " counted AS (SELECT array_agg(identity) AS i, array_agg(window_start) AS s,"
    " array_agg(count) AS c FROM hit)"
    " SELECT w.rev, w.epoch, d.key, d.doc, d.ord, counted.i, counted.s, counted.c"
    " FROM worlds w CROSS JOIN counted"
    " LEFT JOIN docs d ON d.world = w.id AND d.rev > %(rev)s WHERE w.id = %(world)s"
    " ORDER BY d.ord"
)
CATCH_UP_COUNTING = "WITH hit AS (" + RATE_HITS + ")," + _CAUGHT_UP
# A turn's one round trip (store/replica.py): its journal rows, and the catch-up and counts of
# the requests that arrived in it. The counts wait for the journal's lock (a FROM item), so
# every statement that takes both takes the lock first, and two never wait for each other.
# [several journal rows]
ROUND_TRIP = {
    several: f"WITH {JOURNAL_LOCKED}, journalled AS ({JOURNAL_ROWS[several]}),"
    f" hit AS ({_rate_hits(', locked')}),{_CAUGHT_UP}"
    for several in (False, True)
}
JOURNAL_LOCK = 0x6A726E6C  # "jrnl", with the world's hash
CONNECT_TIMEOUT = 5  # seconds to reach the server before a request answers 503
SCHEMA_LOCK = 0x6D6F636B  # "mock": held while one process makes or migrates the schema


def _counting(world: str, hits: dict[str, int], now: float, window: int) -> dict[str, Any]:
    identities = list(hits)
    return {
        "world": world,
        "now": now,
        "window": window,
        "identities": identities,
        "hits": [hits[identity] for identity in identities],
    }


def _journalled(world: str, rows: list[JournalRow]) -> dict[str, Any]:
    """JOURNAL_ROWS' parameters: one row's values, or several rows' columns."""
    if len(rows) == 1:
        meta, request, response = rows[0]
        return {"lock": JOURNAL_LOCK, "world": world, "meta": meta, "request": request,
                "response": response}  # fmt: skip
    metas, requests, responses = (list(column) for column in zip(*rows, strict=True))
    return {"lock": JOURNAL_LOCK, "world": world, "metas": metas, "requests": requests,
            "responses": responses}  # fmt: skip


def _writing(world: str, change: Write, rev: int) -> dict[str, Any]:
    """write_statement's parameters: the change's documents as columns (sql.rows_of's keys
    and values; their places in order are given by the statement's revision)."""
    rows = rows_of(change, rev)
    created = [key in change.created for key, _ in change.docs]
    return {
        "world": world,
        "rev": rev,
        "guard": GUARD_LOCK,
        "keys": [key for key, _, _, _ in rows],
        "ords": list(range(len(rows))),
        "docs": [doc for _, _, _, doc in rows],
        "created": created,
        "n_created": sum(created),
    }


def redacted(url: str) -> str:
    """The URL without its password (for messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


class PostgresDialect(Dialect):
    name = "postgresql"
    shared = True
    unlogged = "UNLOGGED"
    serial = "BIGINT GENERATED ALWAYS AS IDENTITY"  # indexed with its world only

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError as exc:  # an optional extra
            from mockserver.extras import install_command

            raise StoreError(
                f"the PostgreSQL store needs psycopg: {install_command('postgresql')}"
            ) from exc
        self.psycopg = psycopg
        self.tuples_ok = psycopg.pq.ExecStatus.TUPLES_OK
        self.url = url
        self.describe = redacted(url)
        self._conn = self._connect()
        self._aconn: Any = None  # the write lock's (store/replica.py), made when first needed
        self._holding: asyncio.Lock | None = None  # held from hold() to release()
        self._flusher: Any = None  # awaited flushes' (store/replica.py)
        self._flushing: asyncio.Lock | None = None  # held while a flush is sent and waited for
        self._next_flush: asyncio.Future[None] | None = None  # the flush not yet sent

    def _connect(self) -> Any:
        psycopg = self.psycopg
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
            # Statements outside the world's writes (rate buckets) need not wait for the disk:
            # a bucket lost with the database server costs nothing. The writes of the world
            # commit synchronously (SET LOCAL in write()).
            conn.execute("SET synchronous_commit TO off")
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.describe}: {exc}") from exc
        return conn

    @property
    def conn(self) -> Any:
        """The connection, made again when the last one broke (the server restarted, say):
        a request while the server is down fails with :class:`StoreError` (503), and the
        first one after it is back is served, with no restart of the mock."""
        if self._conn.closed or self._conn.broken:
            with contextlib.suppress(self.psycopg.Error):
                self._conn.close()
            self._conn = self._connect()
        return self._conn

    def _fail(self, exc: Exception) -> StoreError:
        return StoreError(f"{self.describe}: {type(exc).__name__}: {exc}")

    def execute(
        self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
    ) -> list[tuple[Any, ...]]:
        try:
            bound = params if isinstance(params, Mapping) else tuple(params) or None
            cursor = self.conn.execute(sql, bound, prepare=bool(params))
            # The result's status, not ``description`` (which builds column objects).
            result = cursor.pgresult
            rows = result is not None and result.status == self.tuples_ok
            return cursor.fetchall() if rows else []
        except self.psycopg.Error as exc:
            raise self._fail(exc) from exc

    def lock_schema(self) -> None:
        self.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))

    def write(
        self,
        world: str,
        change: Write,
        rev: int,
        epoch: int,
        flush: bool = True,
        contended: bool = True,
        guarded: bool = False,
    ) -> int:
        conn = self.conn
        new_epoch = epoch + 1 if change.whole else epoch
        try:
            if not change.whole:
                # The write (the revision, then the rows: one statement, its own
                # transaction), then (``flush``) the flush that makes it durable, outside its
                # transaction. Two plain statements cost the mock less CPU than one pipeline
                # with them (measured: ~105-145 us against ~220-245 us).
                durable = flush and not contended
                sql = write_statement(change.serial, change.appends, guarded, durable)
                found = conn.execute(sql, _writing(world, change, rev), prepare=True).fetchone()
                if flush and not durable:
                    conn.execute(FLUSH, prepare=True)
                return int(found[1])
            # A whole world (reset, restore): one pipelined round trip.
            rows = rows_of(change, rev)
            with conn.pipeline():
                conn.execute("BEGIN")
                conn.execute("SET LOCAL synchronous_commit TO on")
                params = (rev + 1, rev + 1, new_epoch, world, rev)
                conn.execute(CHECKED_BUMP, params, prepare=True)
                conn.execute("DELETE FROM docs WHERE world = %s", (world,))
                with conn.cursor() as cursor:
                    cursor.executemany(UPSERT, [(world, *row) for row in rows])
                conn.execute("COMMIT")
            return rev + 1
        except self.psycopg.Error as exc:
            if change.whole:  # a failed statement alone leaves no transaction open
                with contextlib.suppress(self.psycopg.Error):
                    conn.execute("ROLLBACK")
            if isinstance(exc, self.psycopg.errors.DivisionByZero):  # the revision check
                raise conflict(self.describe) from exc
            raise self._fail(exc) from exc

    def slot(self, world: str, slots: int) -> int:
        """Take a slot of the world for this process (:data:`TAKE_SLOT`)."""
        found = self.execute(TAKE_SLOT, {"world": world})
        return int(found[0][0]) % slots if found else 0

    async def _connected(self, conn: Any) -> Any:
        """An asynchronous connection: ``conn``, or a new one when it is None or broke."""
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        if conn is not None:
            with contextlib.suppress(self.psycopg.Error):
                await conn.close()
        try:
            conn = await self.psycopg.AsyncConnection.connect(
                self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT
            )
            await conn.execute("SET synchronous_commit TO off")
            await conn.execute(HOLD_FUNCTION)
        except self.psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.describe}: {exc}") from exc
        return conn

    async def hold(self, world: str, rev: int) -> list[tuple[Any, ...]]:
        """Take the world's write lock, waiting (in the database, the event loop free) while
        another process holds it; then catch up from ``rev`` (sql.CATCH_UP's rows). The
        process holds one world's lock at a time (``_holding``, until :meth:`release`): its
        one lock connection is never busy waiting for one world's lock while another world's
        must be given back on it (two processes would wait for each other)."""
        if self._holding is None:
            self._holding = asyncio.Lock()
        await self._holding.acquire()
        try:
            self._aconn = await self._connected(self._aconn)
            cursor = await self._aconn.execute(HOLD, (WORLD_LOCK, world, rev), prepare=True)
            return await cursor.fetchall()  # type: ignore[no-any-return]
        except BaseException as exc:
            self._holding.release()
            if isinstance(exc, self.psycopg.Error):
                raise self._fail(exc) from exc
            raise

    async def guard(self, world: str) -> None:
        """Take the guard (GUARD_LOCK) while holding the world's write lock: first writes of
        other processes fail until the lock is given back."""
        try:
            await self._aconn.execute(GUARD, (GUARD_LOCK, world), prepare=True)
        except self.psycopg.Error as exc:
            raise self._fail(exc) from exc

    async def release(self, world: str, flush: bool = False) -> None:
        """Give back the world's write lock and the guard (gone already with a broken
        connection); with ``flush``, then wait until every commit before it is on disk."""
        assert self._holding is not None
        try:
            conn = self._aconn
            if conn is None or conn.closed or conn.broken:
                if flush:  # whether the commits reached the disk is not known
                    raise StoreError(f"{self.describe}: the connection holding the lock broke")
                return
            try:
                await conn.execute(RELEASE_FLUSHED if flush else RELEASE, prepare=True)
            except self.psycopg.Error as exc:
                raise self._fail(exc) from exc
        finally:
            self._holding.release()

    async def flushed(self) -> None:
        """Wait (awaited, on a connection of its own: never behind a wait for a lock) until
        every commit before this call is on disk. Calls made before the next flush is sent
        share it (one flush covers every commit before it): the process's own group commit."""
        pending = self._next_flush
        if pending is None:
            pending = self._next_flush = asyncio.ensure_future(self._flush())
        await asyncio.shield(pending)

    async def _flush(self) -> None:
        if self._flushing is None:
            self._flushing = asyncio.Lock()
        async with self._flushing:  # one flush at a time on the connection
            self._next_flush = None  # sent from here: a later commit waits for the next one
            self._flusher = conn = await self._connected(self._flusher)
            try:
                await conn.execute(FLUSH, prepare=True)
            except self.psycopg.Error as exc:
                raise self._fail(exc) from exc

    def rate_hits(
        self, world: str, hits: dict[str, int], now: float, window: int
    ) -> dict[str, tuple[float, int]]:
        """Count requests in shared buckets, in one statement: each identity's window start
        and count after them."""
        found = self.execute(RATE_HITS, _counting(world, hits, now, window))
        return {identity: (float(start), int(count)) for identity, start, count in found}

    def catch_up_counting(
        self,
        world: str,
        rev: int,
        hits: dict[str, int],
        now: float,
        window: int,
        journal: list[JournalRow] | None = None,
    ) -> list[tuple[Any, ...]]:
        params = {**_counting(world, hits, now, window), "rev": rev}
        if not journal:
            return self.execute(CATCH_UP_COUNTING, params)
        several = len(journal) > 1
        return self.execute(ROUND_TRIP[several], {**params, **_journalled(world, journal)})

    def journal_add(self, world: str, rows: list[JournalRow]) -> None:
        self.execute(JOURNAL_ADD[len(rows) > 1], _journalled(world, rows))

    def rate_buckets(self, world: str) -> dict[str, tuple[float, int]]:
        found = self.execute(
            "SELECT identity, window_start, count FROM rate_buckets WHERE world = %s", (world,)
        )
        return {identity: (float(start), int(count)) for identity, start, count in found}

    def rate_reset(self, world: str, identity: str | None = None) -> None:
        if identity is None:
            self.execute("DELETE FROM rate_buckets WHERE world = %s", (world,))
        else:
            self.execute(
                "DELETE FROM rate_buckets WHERE world = %s AND identity = %s", (world, identity)
            )

    def close(self) -> None:
        self._conn.close()
        for conn in (self._aconn, self._flusher):
            if conn is not None and not conn.closed:
                conn.pgconn.finish()  # no loop may be left to await its close()


def open_postgres(url: str) -> SqlStore:
    return SqlStore(PostgresDialect(url), redacted(url))
