"""The embedded store: one SQLite file (``--state PATH``), written through before each answer.

WAL journal and ``synchronous=FULL``: a write is on disk when its COMMIT returns, and the
response is sent only after that, so an answer once given survives a crash of the process
(SIGKILL included). One process owns the file (``locking_mode=EXCLUSIVE``: another process
opening it is refused), so there is never anything to catch up with.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mockserver.store.base import StoreError, Write
from mockserver.store.sql import BUMP, UPSERT, Dialect, SqlStore, conflict, rows_of


def _q(sql: str) -> str:
    return sql.replace("%s", "?")


BUSY_TIMEOUT = 1.0  # seconds: then the file is in use by another process


class SqliteDialect(Dialect):
    name = "sqlite"
    shared = False

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level None: transactions are the statements this layer sends.
            # check_same_thread False: one thread at a time, but not always the same one
            # (a test client runs the app in a portal thread).
            # timeout: how long a statement waits for a lock another process holds, from the
            # first one (the journal mode below; sqlite3's default would wait 5 s there).
            self.conn = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the state file {path}: {exc}") from exc
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            # One process owns the file: a second one is refused (not silently diverging).
            self.conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute("COMMIT")
        except sqlite3.Error as exc:
            self.conn.close()
            if "locked" in str(exc):
                raise StoreError(
                    f"the state file {path} is in use by another process (one mockserver "
                    "owns a state file; for many processes use --store postgresql://...)"
                ) from exc
            raise StoreError(f"cannot open the state file {path}: {exc}") from exc

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(_q(sql), tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"state file {self.path}: {exc}") from exc

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
        new_epoch = epoch + 1 if change.whole else epoch
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                bumped = self.conn.execute(_q(BUMP), (rev + 1, new_epoch, world, rev)).rowcount
                if bumped != 1:
                    raise conflict(str(self.path))
                if change.whole:
                    self.conn.execute(_q("DELETE FROM docs WHERE world = %s"), (world,))
                self.conn.executemany(_q(UPSERT), ((world, *row) for row in rows_of(change, rev)))
                self.conn.execute("COMMIT")
                return rev + 1
            except BaseException:
                # A full disk or an I/O error may have rolled the transaction back already:
                # the error told is the first one, not the ROLLBACK's.
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise StoreError(f"state file {self.path}: {exc}") from exc

    def close(self) -> None:
        self.conn.close()


def open_sqlite(path: Path) -> SqlStore:
    return SqlStore(SqliteDialect(path), str(path))
