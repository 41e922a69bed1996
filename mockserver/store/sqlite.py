"""The embedded store: one SQLite file (``--state PATH``), written through before each answer.

WAL journal and ``synchronous=FULL``: a write is on disk when its COMMIT returns, and the
response is sent only after that, so an answer once given survives a crash of the process
(SIGKILL included). One process owns the file: a session takes the write lock with
``BEGIN IMMEDIATE`` (another process opening the same file waits up to ``busy_timeout``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from mockserver.store.base import StoreError, Write
from mockserver.store.sql import BUMP, UPSERT, Dialect, SqlStore, conflict, rows_of


def _q(sql: str) -> str:
    return sql.replace("%s", "?")


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
            self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=FULL")
            self.conn.execute("PRAGMA busy_timeout=5000")
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the state file {path}: {exc}") from exc

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(_q(sql), tuple(params)).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"state file {self.path}: {exc}") from exc

    def execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        try:
            self.conn.executemany(_q(sql), rows)
        except sqlite3.Error as exc:
            raise StoreError(f"state file {self.path}: {exc}") from exc

    def begin_locked(self, world: str) -> tuple[int, int] | None:
        self.execute("BEGIN IMMEDIATE")
        found = self.execute("SELECT rev, epoch FROM worlds WHERE id = %s", (world,))
        return (int(found[0][0]), int(found[0][1])) if found else None

    def finish(self, world: str, change: Write | None, rev: int, epoch: int) -> None:
        if change is not None:
            if change.whole:
                self.execute("DELETE FROM docs WHERE world = %s", (world,))
            self.execute_many(UPSERT, ((world, *row) for row in rows_of(change, rev)))
            new_epoch = epoch + 1 if change.whole else epoch
            try:
                cursor = self.conn.execute(_q(BUMP), (rev + 1, new_epoch, world, rev))
            except sqlite3.Error as exc:
                raise StoreError(f"state file {self.path}: {exc}") from exc
            if cursor.rowcount != 1:
                raise conflict(str(self.path))
        self.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()


def open_sqlite(path: Path) -> SqlStore:
    return SqlStore(SqliteDialect(path), str(path))
