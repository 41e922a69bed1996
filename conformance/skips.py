"""Why a check skipped: the reasons every part of the suite names, and :class:`Skip`.

A check that cannot judge skips with a reason (never a vacuous pass); these are the reasons the
runner, the reports and the coverage read by name.
"""

from __future__ import annotations

CAPABILITY_UNAVAILABLE = "capability unavailable"
INFERRED_OPERATION = "method and path are inferred"
NEEDS_SPEND = "spends credits: needs --allow-spend"
NEEDS_CREATE = "creates or changes resources: needs --allow-spend"
NEEDS_CONTROL = "needs the bundled mock's control plane (--mock)"
NOTHING_TO_JUDGE = "nothing to judge"  # it made no observation it could hold to its rule


class Skip(Exception):
    """Skip the rest of the running check, for a reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
