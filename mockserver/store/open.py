"""Which store a mock runs on, from its settings."""

from __future__ import annotations

from pathlib import Path

from mockserver.store.base import StoreError
from mockserver.store.sql import SqlStore


def open_store(store: str | None, state: Path | None) -> SqlStore | None:
    """The SQL store the settings name, or None for the in-memory store (the default).

    ``state``: a SQLite file (``--state PATH``); ``store``: ``memory``, ``sqlite:///PATH`` or
    a PostgreSQL URL (``postgresql://...``).
    """
    if state is not None:
        if store not in (None, "memory"):
            raise StoreError("give either --state PATH or --store URL, not both")
        from mockserver.store.sqlite import open_sqlite

        return open_sqlite(state)
    if store is None or store == "memory":
        return None
    if store.startswith("sqlite:///"):
        from mockserver.store.sqlite import open_sqlite

        return open_sqlite(Path(store.removeprefix("sqlite:///")))
    if store.startswith(("postgresql://", "postgres://")):
        from mockserver.store.postgres import open_postgres

        return open_postgres(store)
    raise StoreError(f"unknown store {store!r}: use memory, sqlite:///PATH or postgresql://...")
