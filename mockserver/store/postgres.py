"""The shared store: PostgreSQL (``--store postgresql://...``), for many workers and replicas.

Every process keeps the world in memory and the database is the truth they share. A session
(one request, one tick, one delivery result) takes the world's transaction-scoped advisory
lock, reads what other processes wrote since it last looked (``docs WHERE rev > r``: usually
nothing, one round trip), runs, and writes what it changed before COMMIT releases the lock.
So writes to one world are serialised across every process, as they are inside one: an
Idempotency-Key executes once, credits are never spent twice, a rate bucket is one bucket.
A write is one pipelined round trip; a session that wrote only rate buckets commits with
``synchronous_commit = off`` (they need not survive a crash of the database).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mockserver.store.base import StoreError, Write
from mockserver.store.sql import BUMP, UPSERT, Dialect, SqlStore, conflict, lock_id, rows_of

# The revision bump, failing (so that the pipeline's COMMIT rolls back) when no row moved.
CHECKED_BUMP = "WITH bumped AS (" + BUMP + " RETURNING 1) SELECT 1 / count(*) FROM bumped"

SCHEMA_LOCK = 0x6D6F636B  # "mock": held while one process makes or migrates the schema


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

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError as exc:  # an optional extra
            raise StoreError(
                "the PostgreSQL store needs psycopg: pip install 'cgcas-kit[postgresql]'"
            ) from exc
        self.psycopg = psycopg
        self.describe = redacted(url)
        try:
            self.conn = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to {self.describe}: {exc}") from exc

    def _fail(self, exc: Exception) -> StoreError:
        return StoreError(f"{self.describe}: {type(exc).__name__}: {exc}")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            cursor = self.conn.execute(sql, tuple(params) or None, prepare=bool(params))
            return cursor.fetchall() if cursor.description else []
        except self.psycopg.Error as exc:
            raise self._fail(exc) from exc

    def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            with self.conn.cursor() as cursor:
                cursor.executemany(sql, list(rows))
        except self.psycopg.Error as exc:
            raise self._fail(exc) from exc

    def lock_schema(self) -> None:
        self.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))

    def begin_locked(self, world: str) -> tuple[int, int] | None:
        try:
            with self.conn.pipeline():
                self.conn.execute("BEGIN")
                self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (lock_id(world),))
                cursor = self.conn.execute(
                    "SELECT rev, epoch FROM worlds WHERE id = %s", (world,), prepare=True
                )
            found = cursor.fetchone()
        except self.psycopg.Error as exc:
            raise self._fail(exc) from exc
        return (int(found[0]), int(found[1])) if found else None

    def finish(self, world: str, change: Write | None, rev: int, epoch: int) -> None:
        conn = self.conn
        if change is None:
            self.execute("COMMIT")
            return
        new_epoch = epoch + 1 if change.whole else epoch
        try:
            # One round trip: the rows, the revision (a check that nobody wrote without the
            # lock) and the commit, pipelined. A failed check rolls the whole write back.
            with conn.pipeline():
                if not change.durable:
                    conn.execute("SET LOCAL synchronous_commit TO OFF")
                if change.whole:
                    conn.execute("DELETE FROM docs WHERE world = %s", (world,))
                with conn.cursor() as cursor:
                    cursor.executemany(UPSERT, [(world, *row) for row in rows_of(change, rev)])
                conn.execute(CHECKED_BUMP, (rev + 1, new_epoch, world, rev), prepare=True)
                conn.execute("COMMIT")
        except self.psycopg.Error as exc:
            with contextlib.suppress(self.psycopg.Error):
                conn.execute("ROLLBACK")
            if isinstance(exc, self.psycopg.errors.DivisionByZero):  # CHECKED_BUMP
                raise conflict(self.describe) from exc
            raise self._fail(exc) from exc

    def close(self) -> None:
        self.conn.close()


def open_postgres(url: str) -> SqlStore:
    return SqlStore(PostgresDialect(url), redacted(url))
