"""Why a call a check needed was refused, in the words of a skip reason.

A check that cannot bring about what it judges (a job started, a paid call made, a record
created) skips, and its reason names the cause the deployment answered: too few credits or a
budget cap (``402``), the capability unavailable (``503``), or else the answers themselves. A
workspace short of credits is not a deployment without the capability.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from conformance.payment import payment_refused
from conformance.skips import CAPABILITY_UNAVAILABLE
from conformance.target import Exchange

if TYPE_CHECKING:
    from conformance.context import Context
    from conformance.contract import Operation


def refusal(what: str, answers: Iterable[Exchange]) -> str:
    """``what`` could not be done, with the cause ``answers`` show: a 402 first (it is why the
    work stopped), then a capability unavailable, else the distinct answers (the first three)."""
    answers = list(answers)
    for exchange in answers:
        if reason := payment_refused(exchange):
            return f"{what}: {reason}"
    if not answers:
        return what
    if all(a.capability_unavailable for a in answers):
        return f"{what}: {CAPABILITY_UNAVAILABLE}"
    shown = list(dict.fromkeys(a.answered for a in answers))
    return f"{what}: answered {', '.join(shown[:3])}"


def refused_since(ctx: Context, mark: int, ops: Iterable[Operation]) -> list[Exchange]:
    """What ``ops`` answered the running check, other than a success, after the run's first
    ``mark`` requests (``mark``: ``ctx.target.count`` before the tries)."""
    ids = {op.operation_id for op in ops}
    found = []
    for exchange in reversed(ctx.target.exchanges):
        if exchange.index <= mark:
            break
        if exchange.operation_id in ids and exchange.check == ctx.check.name:
            found.append(exchange)
    return [e for e in reversed(found) if not 200 <= e.status < 300]
