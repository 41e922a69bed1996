"""A call refused for payment (``402``), in the words of a skip reason.

Too few credits or a budget cap: the causes conformance/refusals.py names first, and the one
an id pool names when it could not create a record (conformance/idpool.py).
"""

from __future__ import annotations

from conformance.target import Exchange

NO_CREDITS = "the workspace has too few credits (402 insufficient_credits)"
BUDGET_CAPPED = "a budget policy caps the key's spending (402 budget_capped)"


def payment_refused(exchange: Exchange) -> str | None:
    """The skip reason for a call refused with ``402`` (None for any other answer)."""
    if exchange.status != 402:
        return None
    if exchange.code == "budget_capped":
        return BUDGET_CAPPED
    if exchange.code == "insufficient_credits":
        return NO_CREDITS
    return f"the call was refused for payment ({exchange.answered})"
