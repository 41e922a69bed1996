"""Where a mock keeps its state: in memory (the default), in a SQLite file, or in PostgreSQL.

The areas never see a store: they read and change the world's tree (world.py) inside
transactions, and a transaction names the documents it changed (platform/documents.py). A
:class:`~mockserver.store.replica.Replica` writes those documents to a SQL store as the
transaction ends, before the response is sent, and brings in what other processes wrote when
the next unit of work starts. So the in-memory store costs nothing, and the two SQL stores
share one layer (sql.py) that differs only where the dialects do.
"""

from __future__ import annotations

from mockserver.store.base import SchemaError, StoreError, WorldStore
from mockserver.store.open import open_store

__all__ = ["SchemaError", "StoreError", "WorldStore", "open_store"]
