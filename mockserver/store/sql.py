"""The SQL layer both SQL stores share: the schema, its version, and one world's rows.

Every document of a world (platform/documents.py) is one row of ``docs``: its key (a JSON
array), its value as JSON text (NULL once deleted, so that other processes learn of the
deletion), the revision that last wrote it and its place in order (``ord``: where it first
appeared, so that a world read back has its records, workspaces and price table in the
order they were made). ``worlds`` holds each world's revision, bumped by every write, and
its epoch, bumped when a reset or restore replaces the whole world. A process that knows a
world at revision r reads ``docs WHERE rev > r`` to catch up.

The dialects differ in three places, and only there: parameter marks, how a session takes
the world's write lock (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: an advisory lock), and how
a write is made cheap (PostgreSQL: one pipelined round trip).
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from mockserver.platform.documents import DocKey
from mockserver.store.base import (
    Conflict,
    Delta,
    JournalRow,
    Row,
    SchemaError,
    StoreError,
    Write,
)

SCHEMA_VERSION = 3
ORD_STRIDE = 1 << 20  # ords of one write: (rev * stride) + its position in the write

# Each entry turns a store of version i (its index) into version i + 1.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE worlds (id TEXT PRIMARY KEY, rev BIGINT NOT NULL, epoch BIGINT NOT NULL)",
        "CREATE TABLE docs (world TEXT NOT NULL, key TEXT NOT NULL, ord BIGINT NOT NULL,"
        " rev BIGINT NOT NULL, doc TEXT, PRIMARY KEY (world, key))",
        "CREATE INDEX docs_rev ON docs (world, rev)",
        "CREATE TABLE secrets (world TEXT NOT NULL, name TEXT NOT NULL, value TEXT NOT NULL,"
        " PRIMARY KEY (world, name))",
        "CREATE TABLE sandboxes (id TEXT PRIMARY KEY, spec TEXT NOT NULL,"
        " created_at DOUBLE PRECISION NOT NULL, used_at DOUBLE PRECISION NOT NULL)",
        # Rate buckets need not survive a crash of the database: no write-ahead log for them.
        "CREATE {unlogged} TABLE rate_buckets (world TEXT NOT NULL, identity TEXT NOT NULL,"
        " window_start DOUBLE PRECISION NOT NULL, count INTEGER NOT NULL,"
        " PRIMARY KEY (world, identity))",
    ),
    (
        # The request journal of a shared store (platform/journal.py SharedJournal): one row a
        # request, numbered store-wide in the order they were answered; a record of what was
        # answered, not state: no write-ahead log.
        "CREATE {unlogged} TABLE journal (seq {serial}, world TEXT NOT NULL,"
        " meta TEXT NOT NULL, request_body BYTEA, response_body BYTEA,"
        " cleared BOOLEAN NOT NULL DEFAULT FALSE)",
        "CREATE INDEX journal_world ON journal (world, seq)",
    ),
    (
        # The revision of the last write that was not an append (base.Write; PostgreSQL's
        # writes check it: postgres.py), and how many processes took a slot of the world
        # (store/replica.py numbers with it).
        "ALTER TABLE worlds ADD COLUMN mrev BIGINT NOT NULL DEFAULT 0",
        "ALTER TABLE worlds ADD COLUMN slots BIGINT NOT NULL DEFAULT 0",
    ),
)


def encode_key(key: DocKey) -> str:
    return orjson.dumps(list(key)).decode()


def decode_key(text: str) -> DocKey:
    return tuple(orjson.loads(text))


def encode_value(value: Any) -> str:
    return orjson.dumps(value).decode()


class Dialect:
    """How one database speaks: overridden by sqlite.py and postgres.py."""

    name = "sql"
    shared = False
    unlogged = ""  # how CREATE says a table needs no write-ahead log (PostgreSQL: UNLOGGED)
    serial = "INTEGER PRIMARY KEY AUTOINCREMENT"  # a key numbered by the database, never reused

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def lock_schema(self) -> None:
        """Hold off other processes while the schema is made or migrated (in a transaction)."""

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
        """Write one transaction's documents over revision ``rev`` and commit, in one
        database transaction; the revision it wrote. :class:`Conflict` (nothing written) when
        another process's write came between (base.Write says which count). Without
        ``flush`` the commit may not be on disk yet (PostgreSQL): :meth:`flushed` or
        ``release(flush=True)`` waits for it. ``contended``: other processes are writing to
        the world, so its row should not stay locked while the disk is written (PostgreSQL:
        the commit, then a flush). ``guarded``: a first write of a unit of work that can wait
        for the world's write lock: it fails as a conflict while the lock's holder guards its
        run (PostgreSQL, store/replica.py)."""
        raise NotImplementedError

    def slot(self, world: str, slots: int) -> int:
        """Take a slot of the world (0 to ``slots`` - 1) for this process (store/replica.py
        numbers with it). Only for a store other processes share."""
        raise NotImplementedError

    async def hold(self, world: str, rev: int) -> list[tuple[Any, ...]]:
        """Take the world's write lock, waiting while another process holds it (store/replica.py),
        then catch up from ``rev``: CATCH_UP's rows. Only for a store other processes share."""
        raise NotImplementedError

    async def guard(self, world: str) -> None:
        """While holding the world's write lock, make the first writes of others fail."""

    async def release(self, world: str, flush: bool = False) -> None:
        """Give back the world's write lock; with ``flush``, then wait until every commit
        before it is on disk."""

    async def flushed(self) -> None:
        """Wait (awaited) until every commit before this call is on disk (SQLite: they are)."""

    def close(self) -> None:
        raise NotImplementedError


class SqlStore:
    """A database holding any number of worlds (the default one, and sandboxes)."""

    def __init__(self, dialect: Dialect, describe: str) -> None:
        self.dialect = dialect
        self.describe = describe  # for messages: a path, or a URL without its password
        # One connection per process; it is used only between awaits (every call is
        # synchronous), so concurrent requests of one process never interleave on it.
        try:
            self._migrate()
        except BaseException:
            dialect.close()
            raise

    def _migrate(self, migrations: Sequence[Sequence[str]] = MIGRATIONS) -> None:
        db = self.dialect
        db.execute("BEGIN")
        try:
            db.lock_schema()
            db.execute("CREATE TABLE IF NOT EXISTS kit_schema (version INTEGER NOT NULL)")
            found = db.execute("SELECT version FROM kit_schema")
            version = int(found[0][0]) if found else 0
            if version > len(migrations):
                raise SchemaError(
                    f"{self.describe} was written by a newer kit (state schema {version}; "
                    f"this kit reads up to {len(migrations)}): upgrade the kit, or give "
                    "another --state"
                )
            for step in migrations[version:]:
                for statement in step:
                    db.execute(
                        statement.replace("{unlogged}", db.unlogged).replace("{serial}", db.serial)
                    )
            if not found:
                db.execute("INSERT INTO kit_schema (version) VALUES (%s)", (len(migrations),))
            elif version < len(migrations):
                db.execute("UPDATE kit_schema SET version = %s", (len(migrations),))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def world(self, world_id: str) -> SqlWorld:
        return SqlWorld(self, world_id)

    def _in_transaction(self, *statements: tuple[str, Sequence[Any]]) -> list[tuple[Any, ...]]:
        """Run statements in one transaction; the rows of the last (a single statement is a
        transaction of its own: no BEGIN and COMMIT round trips)."""
        db = self.dialect
        if len(statements) == 1:
            sql, params = statements[0]
            return db.execute(sql, params)
        db.execute("BEGIN")
        try:
            rows: list[tuple[Any, ...]] = []
            for sql, params in statements:
                rows = db.execute(sql, params)
            db.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(StoreError):
                db.execute("ROLLBACK")
            raise
        return rows

    # -- the sandbox registry (sandboxes.py): every process sees every sandbox ---------------

    def add_sandbox(self, sandbox_id: str, spec: dict[str, Any], now: float) -> None:
        self._in_transaction(
            ("INSERT INTO sandboxes (id, spec, created_at, used_at) VALUES (%s, %s, %s, %s)",
             (sandbox_id, encode_value(spec), now, now)),
        )  # fmt: skip

    def sandbox(self, sandbox_id: str, now: float | None) -> tuple[dict[str, Any], float] | None:
        """A live sandbox's spec and creation time (None: ended); ``now`` marks it used."""
        if now is None:
            sql, params = "SELECT spec, created_at FROM sandboxes WHERE id = %s", (sandbox_id,)
        else:
            sql = "UPDATE sandboxes SET used_at = %s WHERE id = %s RETURNING spec, created_at"
            params = (now, sandbox_id)
        found = self._in_transaction((sql, params))
        return (orjson.loads(found[0][0]), float(found[0][1])) if found else None

    def sandboxes(self) -> list[tuple[str, float]]:
        """The live sandboxes' ids and last use, oldest first."""
        rows = self.dialect.execute("SELECT id, used_at FROM sandboxes ORDER BY created_at, id")
        return [(str(i), float(used)) for i, used in rows]

    def end_sandbox(self, sandbox_id: str) -> bool:
        """Forget a sandbox and its world; whether it was live."""
        found = self._in_transaction(
            ("DELETE FROM docs WHERE world = %s", (sandbox_id,)),
            ("DELETE FROM secrets WHERE world = %s", (sandbox_id,)),
            ("DELETE FROM journal WHERE world = %s", (sandbox_id,)),
            ("DELETE FROM worlds WHERE id = %s", (sandbox_id,)),
            ("DELETE FROM sandboxes WHERE id = %s RETURNING id", (sandbox_id,)),
        )
        return bool(found)

    def close(self) -> None:
        self.dialect.close()


class SqlWorld:
    """One world of a :class:`SqlStore` (the store interface of base.py)."""

    def __init__(self, store: SqlStore, world_id: str) -> None:
        self.store = store
        self.id = world_id
        self.db = store.dialect
        self.shared = store.dialect.shared

    def ensure(self) -> None:
        """Make the world's row, if there is none yet (revision 0: nothing written)."""
        self.db.execute(
            "INSERT INTO worlds (id, rev, epoch) VALUES (%s, 0, 0) ON CONFLICT DO NOTHING",
            (self.id,),
        )

    def whole(self) -> Delta:
        """Everything the store holds of the world."""
        found = self.db.execute("SELECT rev, epoch FROM worlds WHERE id = %s", (self.id,))
        rev, epoch = (int(found[0][0]), int(found[0][1])) if found else (0, 0)
        rows = self.db.execute(
            "SELECT key, doc, ord FROM docs WHERE world = %s AND doc IS NOT NULL ORDER BY ord",
            (self.id,),
        )
        return Delta(rev, epoch, [_row(*row) for row in rows], whole=True)

    def catch_up(self, rev: int, epoch: int) -> Delta | None:
        """What other processes wrote after ``rev`` (one statement, one round trip), the
        whole world when they replaced it (another epoch), or None when nothing."""
        return self._delta(self.db.execute(CATCH_UP, (rev, self.id)), rev, epoch)

    def _delta(self, rows: list[tuple[Any, ...]], rev: int, epoch: int) -> Delta | None:
        if not rows:
            raise StoreError(f"{self.store.describe}: world {self.id!r} is gone")
        now_rev, now_epoch = int(rows[0][0]), int(rows[0][1])
        if now_epoch != epoch:
            return self.whole()
        if now_rev == rev:
            return None
        return Delta(now_rev, now_epoch, [_row(*row[2:]) for row in rows], whole=False)

    def rate_hits(
        self, hits: dict[str, int], now: float, window: int
    ) -> dict[str, tuple[float, int]]:
        """Count requests in the world's shared buckets (PostgreSQL): ``hits`` of each
        identity; each one's (window start, count after them)."""
        return self.db.rate_hits(self.id, hits, now, window)  # type: ignore[attr-defined,no-any-return]

    def rate_buckets(self) -> dict[str, tuple[float, int]]:
        """The world's shared buckets (PostgreSQL): each identity's (window start, count)."""
        return self.db.rate_buckets(self.id)  # type: ignore[attr-defined,no-any-return]

    def rate_reset(self, identity: str | None = None) -> None:
        """Empty one identity's shared bucket, or every one of the world (None)."""
        self.db.rate_reset(self.id, identity)  # type: ignore[attr-defined]

    def catch_up_counting(
        self,
        rev: int,
        epoch: int,
        hits: dict[str, int],
        now: float,
        window: int,
        journal: list[JournalRow] | None = None,
    ) -> tuple[Delta | None, dict[str, tuple[float, int]]]:
        """:meth:`catch_up`, and requests counted in the shared buckets (:meth:`rate_hits`), in
        one statement (PostgreSQL): the delta, and each identity's (window start, count). With
        ``journal``, those rows are journalled by the same statement (:meth:`journal_add`)."""
        rows = self.db.catch_up_counting(self.id, rev, hits, now, window, journal)  # type: ignore[attr-defined]
        if not rows:
            raise StoreError(f"{self.store.describe}: world {self.id!r} is gone")
        identities, starts, counts = (column or () for column in rows[0][5:8])
        counted = {
            identity: (float(start), int(count))
            for identity, start, count in zip(identities, starts, counts, strict=True)
        }
        now_rev, now_epoch = int(rows[0][0]), int(rows[0][1])
        if now_epoch != epoch:
            return self.whole(), counted
        if now_rev == rev:
            return None, counted
        delta = Delta(now_rev, now_epoch, [_row(*row[2:5]) for row in rows], whole=False)
        return delta, counted

    def write(
        self,
        change: Write,
        rev: int,
        epoch: int,
        flush: bool = True,
        contended: bool = True,
        guarded: bool = False,
    ) -> tuple[int, int]:
        """Write one transaction's changes over revision ``rev`` (the one this process
        knows); the revision written and the new epoch. :class:`Conflict` when a write it
        must follow came first (base.Write).
        ``flush`` False: committed, perhaps not yet on disk (:meth:`flush`). ``contended``:
        others are writing to the world (see :meth:`Dialect.write`)."""
        written = self.db.write(self.id, change, rev, epoch, flush, contended, guarded)
        return written, epoch + 1 if change.whole else epoch

    def slot(self, slots: int) -> int:
        """A slot of the world (0 to ``slots`` - 1) for this process (PostgreSQL:
        store/replica.py numbers with it)."""
        return self.db.slot(self.id, slots)

    async def hold(self, rev: int, epoch: int) -> Delta | None:
        """Take the world's write lock, waiting (awaited) while another process holds it, and
        catch up under it (:meth:`catch_up`'s answer), in one round trip. While this process
        holds it, no other process's writing unit of work runs, so one caught up under it does
        not conflict (but for a tick or delivery step of another)."""
        return self._delta(await self.db.hold(self.id, rev), rev, epoch)

    async def guard(self) -> None:
        """Holding the world's write lock: first writes of other processes fail as conflicts
        until it is given back, so that the next run under it cannot conflict."""
        await self.db.guard(self.id)

    async def release(self, flush: bool = False) -> None:
        await self.db.release(self.id, flush)

    async def flushed(self) -> None:
        await self.db.flushed()

    # -- the request journal (platform/journal.py SharedJournal) ----------------------------

    def journal_add(self, rows: list[JournalRow]) -> None:
        """Journal answered requests, in order: (meta, request body, response body) each, in
        one statement (PostgreSQL), numbered store-wide after every entry already visible."""
        self.db.journal_add(self.id, rows)  # type: ignore[attr-defined]

    def journal_trim(self, keep: int) -> None:
        """Forget all but the newest ``keep`` entries of the world (the newest row stays, even
        cleared: it holds the latest number)."""
        self.db.execute(
            "DELETE FROM journal WHERE world = %s AND seq < (SELECT min(seq) FROM"
            " (SELECT seq FROM journal WHERE world = %s ORDER BY seq DESC LIMIT %s) AS kept)",
            (self.id, self.id, keep),
        )

    def journal_rows(self, after: int, keep: int) -> list[tuple[Any, ...]]:
        """The newest ``keep`` entries of the world not cleared, those after ``after``, oldest
        first: (seq, meta, request body, response body)."""
        return self.db.execute(
            "SELECT seq, meta, request_body, response_body FROM (SELECT * FROM journal"
            " WHERE world = %s AND NOT cleared ORDER BY seq DESC LIMIT %s) AS kept"
            " WHERE seq > %s ORDER BY seq",
            (self.id, keep, after),
        )

    def journal_bounds(self, keep: int) -> tuple[int, int | None]:
        """The last number the world's journal ever gave (0 before the first) and its oldest
        entry kept (None when none is)."""
        found = self.db.execute(
            "SELECT (SELECT max(seq) FROM journal WHERE world = %s), (SELECT min(seq) FROM"
            " (SELECT seq FROM journal WHERE world = %s AND NOT cleared ORDER BY seq DESC"
            " LIMIT %s) AS kept)",
            (self.id, self.id, keep),
        )
        latest, oldest = found[0] if found else (None, None)
        return int(latest or 0), None if oldest is None else int(oldest)

    def journal_clear(self) -> None:
        """Empty the world's journal; its newest row stays, cleared, to hold the number."""
        self.store._in_transaction(
            ("UPDATE journal SET cleared = TRUE, request_body = NULL, response_body = NULL"
             " WHERE world = %s", (self.id,)),
            ("DELETE FROM journal WHERE world = %s AND seq < (SELECT max(seq) FROM journal"
             " WHERE world = %s)", (self.id, self.id)),
        )  # fmt: skip

    def secret(self, name: str, make: Callable[[], bytes]) -> bytes:
        db = self.db
        db.execute("BEGIN")
        try:
            db.execute(
                "INSERT INTO secrets (world, name, value) VALUES (%s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                (self.id, name, base64.b64encode(make()).decode()),
            )
            found = db.execute(
                "SELECT value FROM secrets WHERE world = %s AND name = %s", (self.id, name)
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return base64.b64decode(found[0][0])

    def close(self) -> None:
        self.store.close()


def _row(key: str, doc: str | None, ord_: int) -> Row:
    return Row(decode_key(key), None if doc is None else orjson.loads(doc), int(ord_))


# The world's revision and epoch, with the documents written after a revision (LEFT JOIN: one
# row with no document when there are none).
CATCH_UP = (
    "SELECT w.rev, w.epoch, d.key, d.doc, d.ord FROM worlds w"
    " LEFT JOIN docs d ON d.world = w.id AND d.rev > %s WHERE w.id = %s ORDER BY d.ord"
)


def rows_of(change: Write, rev: int) -> list[tuple[str, int, int, str | None]]:
    """(key, ord, rev, doc) of every document a write puts, in order."""
    new_rev = rev + 1
    base = 0 if change.whole else new_rev * ORD_STRIDE
    return [
        (encode_key(key), base + i, new_rev, None if value is None else encode_value(value))
        for i, (key, value) in enumerate(change.docs)
    ]


UPSERT = (
    "INSERT INTO docs (world, key, ord, rev, doc) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (world, key) DO UPDATE SET rev = excluded.rev, doc = excluded.doc"
)
BUMP = "UPDATE worlds SET rev = %s, epoch = %s WHERE id = %s AND rev = %s"


def conflict(describe: str) -> Conflict:
    return Conflict(f"{describe}: another process wrote first; nothing of this was kept")
