"""Servers for the conformance suite's tests: the mock in a thread, and small fake deployments."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from conformance.api import RunConfig, run
from conformance.results import Report
from tests.support.serve import Served, free_port

__all__ = ["GLOBEX", "OWNER", "Served", "free_port", "live_mock", "run_quietly"]

OWNER = "sk_test_acme_owner"
GLOBEX = "sk_test_globex_owner"


def live_mock(*, defects: Iterable[str] = (), **settings: Any) -> Served:
    """The bundled mock (manual clock, seeded, private callbacks allowed) as a live server,
    with the named test-only defects (tests/defects/) if any."""
    from mockserver.settings import Settings
    from tests.defects import create_app

    options = {"clock": "manual", "seed": 7, "allow_private_callbacks": True} | settings
    return Served(create_app(Settings(**options), defects), log_level="error", lifespan="off")


def run_quietly(**options: Any) -> Report:
    options.setdefault("seed", 1)
    return run(RunConfig(**options))


def skip_reasons(report: Report) -> set[str]:
    return {reason for c in report.checks for reason in c.skipped}
