"""Waiting on a deployment's own clock: how often a job is read, how long a check waits.

Against a deployment (no control plane) a check that needs a finished job reads it at the
interval the interface document recommends ("Recommended job polling interval: 15 to 30
seconds", read from the contract's description of ``GET /v1/jobs/{jobId}``; the upper bound,
so that polling spends as few requests of the rate limit as the document allows) for at most
``--job-wait`` seconds, and a check that waits for webhook deliveries looks at its receiver
every second for at most ``--webhook-wait`` seconds (announced :data:`DELIVERY_STEP` seconds at
a time, so that a long wait shows). Past either wait the
check skips with a reason naming the wait and what was not reached (:func:`beyond`); it never
fails for it. Every pause goes through :meth:`conformance.target.Target.wait`, which announces
it (what it waits for, until when) and moves the bundled mock's clock where the run has its
control plane.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from conformance.context import Context
    from conformance.contract import Contract

READ_JOB = "getJob"
DOCUMENT_INTERVAL = 30.0  # the interface document's Limits table: "15 to 30 seconds"
DEFAULT_JOB_WAIT = 600.0  # seconds; see default_job_wait
DELIVERY_STEP = 30.0  # seconds of a wait for deliveries announced at once
JOB_WAIT, WEBHOOK_WAIT = "--job-wait", "--webhook-wait"
_INTERVAL = re.compile(r"polling interval:?\s*(\d+)\s*to\s*(\d+)\s*seconds", re.I)


def default_job_wait(time_budget: float | None) -> float:
    """How long a check waits for a job when ``--job-wait`` is not given (``time_budget``: the
    run's ``--time-budget`` in seconds, None without one).

    600 s: the longest job a check waits for at the bundled mock's own durations (a 3D model,
    430 s; a render, 375 s) with room to spare, so that a correct deployment of similar speed
    is judged. Jobs the prepare phase starts (conformance/runner.py) run while the other checks
    do, so their checks seldom wait that long. With ``--time-budget``, at most four fifths of
    it: the jobs started with the run, and the wait leaves the last fifth to the checks after
    it (a wait past the run's deadline is never made: "time budget used up").
    """
    if time_budget is not None:
        return min(DEFAULT_JOB_WAIT, 0.8 * time_budget)
    return DEFAULT_JOB_WAIT


def polling_interval(contract: Contract) -> float:
    """The recommended interval between two reads of a job (the upper bound the contract
    states for ``getJob``; the document's 30 s where it states none)."""
    op = contract.full.operations.get(READ_JOB)
    text = " ".join(str(op.definition.get("description", "")).split()) if op else ""
    found = _INTERVAL.search(text)
    return float(found.group(2)) if found else DOCUMENT_INTERVAL


def pauses(
    ctx: Context,
    limit: float,
    step: float,
    why: str,
    until: Callable[[], bool] | None = None,
) -> Iterator[float]:
    """Pause ``step`` seconds at a time (the last pause shorter) until ``limit`` seconds have
    passed; after each pause, yield the seconds waited so far. The caller looks again after
    each pause and stops iterating when it has what it waited for; a pause ends early once
    ``until`` holds."""
    waited = 0.0
    while waited < limit:
        pause = min(step, limit - waited)
        ctx.target.wait(pause, of_limit(why, waited + pause, limit, step), until)
        waited += pause
        yield waited


def of_limit(why: str, waited: float, limit: float, step: float) -> str:
    """``why``, with how far the whole wait has come where it takes more than one pause."""
    return f"{why} ({waited:g} of {limit:g} s)" if limit > step else why


def job_polls(ctx: Context, why: str) -> Iterator[float]:
    """The pauses between reads of a job: the recommended interval, up to ``--job-wait``."""
    interval = polling_interval(ctx.contract)
    return pauses(ctx, ctx.session.job_wait, interval, f"{why}, read every {interval:g} s")


def wait_for_deliveries(
    ctx: Context, arrived: Callable[[], bool], why: str, limit: float | None = None
) -> bool:
    """Wait until ``arrived()`` (the receiver is looked at every second) for at most
    ``limit`` seconds (``--webhook-wait``); whether it arrived."""
    limit = ctx.session.webhook_wait if limit is None else limit
    if arrived():
        return True
    return any(arrived() for _ in pauses(ctx, limit, DELIVERY_STEP, why, arrived))


def beyond(ctx: Context, what: str, option: str = JOB_WAIT) -> str:
    """A skip reason: ``what`` did not happen within the wait ``option`` names."""
    seconds = ctx.session.job_wait if option == JOB_WAIT else ctx.session.webhook_wait
    return f"{what} within {option} ({seconds:g} s)"
