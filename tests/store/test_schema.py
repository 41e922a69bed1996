"""The state file records its schema version: a kit opens a file of its own version, migrates
an older one step by step, and refuses a newer one with a message that says what to do."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys

import pytest

from mockserver.store.base import SchemaError, StoreError
from mockserver.store.sql import MIGRATIONS, SCHEMA_VERSION, SqlStore
from mockserver.store.sqlite import SqliteDialect, open_sqlite


def version_of(path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT version FROM kit_schema").fetchone()[0])


def test_a_new_file_records_the_schema_version(tmp_path):
    open_sqlite(tmp_path / "s.db").close()
    assert version_of(tmp_path / "s.db") == SCHEMA_VERSION == len(MIGRATIONS)


def test_an_older_file_is_migrated_step_by_step(tmp_path):
    path = tmp_path / "s.db"
    open_sqlite(path).close()
    later = (*MIGRATIONS, ("CREATE TABLE notes (world TEXT, text TEXT)",))

    class NextKit(SqlStore):
        def _migrate(self, migrations=later):  # the kit of the next schema version
            super()._migrate(migrations)

    NextKit(SqliteDialect(path), str(path)).close()
    assert version_of(path) == SCHEMA_VERSION + 1
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 0


def test_a_newer_file_is_refused_with_what_to_do(tmp_path):
    path = tmp_path / "s.db"
    open_sqlite(path).close()
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute("UPDATE kit_schema SET version = 99")
    with pytest.raises(SchemaError, match=r"newer kit .*schema 99.*upgrade the kit"):
        open_sqlite(path)
    done = subprocess.run(
        [sys.executable, "-m", "mockserver", "--port", "0", "--state", str(path)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "newer kit" in done.stderr and "Traceback" not in done.stderr


def test_a_second_process_on_the_same_file_is_refused(tmp_path):
    path = tmp_path / "s.db"
    first = open_sqlite(path)
    try:
        with pytest.raises(StoreError, match="in use by another process"):
            open_sqlite(path)
    finally:
        first.close()
