"""Run the tests on the store ``MOCKSERVER_TEST_STORE`` names: ``memory`` (the default),
``sqlite`` or ``postgresql``.

Every app a test makes (``create_app``, ``MockApp``) then gets a store of its own: a new
SQLite file, or a new schema of the PostgreSQL database (tests/support/postgres.py finds or
starts the server). Apps that name a store themselves keep it.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import tempfile
from pathlib import Path

from mockserver.settings import Settings

STORES = ("memory", "sqlite", "postgresql")
_counter = itertools.count()
_tmp: Path | None = None


def test_store() -> str:
    store = os.environ.get("MOCKSERVER_TEST_STORE", "memory") or "memory"
    if store not in STORES:
        raise RuntimeError(f"MOCKSERVER_TEST_STORE={store!r}: use one of {', '.join(STORES)}")
    return store


def with_test_store(settings: Settings) -> Settings:
    """``settings`` on a fresh store of the kind the run asks for (unless they name one)."""
    store = test_store()
    if store == "memory" or settings.state is not None or settings.store is not None:
        return settings
    if store == "sqlite":
        global _tmp
        if _tmp is None:
            _tmp = Path(tempfile.mkdtemp(prefix="mockserver-test-state-"))
        return dataclasses.replace(settings, state=_tmp / f"app-{next(_counter)}.db")
    from tests.support.postgres import fresh_schema_url

    return dataclasses.replace(settings, store=fresh_schema_url())
