"""How a bounded run spends its requests and its time: the plan, then breadth before depth.

**The plan** (``--time-budget``). The run reads the rate limit the deployment announces on its
first authenticated response: ``x-ratelimit-limit`` requests a window, the window being
``x-ratelimit-reset`` seconds when that response opened a fresh one (``remaining`` is
``limit - 1``), else the minute the interface document states. Its request budget is the
smaller of ``--max-requests`` and what that rate allows in the time left, less a margin:
:data:`MARGIN` of the time is kept back, at least :data:`MIN_MARGIN_SECONDS`. Pacing overlaps
the requests' own response time (at 100 a minute a request may take 0.6 s before the rate, not
the deployment, is what bounds the run), so the margin is for what the rate does not count: the
waits for jobs and deliveries, a window opening just before the deadline, Hypothesis's own time
(measured against the bundled mock at a high rate: 1,783 requests in 12 s besides the waits).
The deadline itself is kept by the target (conformance/target.py): a plan that is too generous
costs depth at the end of the run, never its end time.

**Breadth, then depth** (any bounded run: ``--max-requests`` or ``--time-budget``). Requests go
first to judging every rule once, then to depth:

* the *breadth pass* runs every check once, in the run's order (family order: checks that
  change state run in the order their verdicts were made in, never reordered by a budget). A
  check declared ``deep`` (conformance/checks/__init__.py) covers only what it needs to judge
  once: the items of its list up to its first judgement (:func:`share`), one example of its
  generated cases (``Context.phase`` is :data:`BREADTH`). Every check may spend what is left
  less :data:`RESERVE` requests for each check after it (:func:`breadth_allowance`): the run's
  early checks never starve its late ones (the schema and model checks come last), and a check
  that needs little leaves the rest to those after it. :data:`RESERVE` is what most checks need
  to judge once (measured against the bundled mock: the checks that are not deep make 6
  requests at the median, and five in six make at most 8);
* the *depth pass* runs the ``deep`` checks again on what their breadth pass left (the rest of
  their list, more examples, more sequences), each with a fair share of the budget left: what
  is left divided by the deep checks still to run (:func:`depth_allowance`), so that what a
  check does not use goes to the checks after it (the per-operation checks need a few dozen
  requests; schema fuzzing and the model take what they leave). Before it, a check that its
  allowance cut in the breadth pass before it judged anything runs again from the start, with
  all that is left but :data:`RESERVE` for each such check after it: judging once comes first.

**The rate-limit probes** (``rate-limit``, ``rate-limit-shared-bucket``) spend a whole window of
the key on purpose: against a deployment each costs about one window, the limit + 3 requests
(:func:`window_requests`) and up to the window's minute of waiting for ``Retry-After``. Their
family is the last of the run, so they take their turn after every other check has judged
once (the prepared checks, whose jobs run meanwhile, excepted), from what the budget has left;
where less than a window is left they are skipped with "request budget used up" (the time
budget likewise refuses a wait that would end after it). The plan's line states that cost.
Against the bundled mock they work in sandboxes of their own at a low limit: a few requests.

Both passes record into one CheckResult per check. Reaching an allowance is not a skip: a check
that judged shows no "request budget used up"; the run's notes name the checks whose depth the
budget cut short. An unbounded run is one pass (:data:`WHOLE`), as it always was.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from conformance.passes import BREADTH, DEPTH, WHOLE

if TYPE_CHECKING:
    from conformance.checks import Check
    from conformance.target import Exchange


RESERVE = 8  # requests kept in the breadth pass for each check still to run
MARGIN = 0.10  # of the time budget, kept back from the rate's allowance
MIN_MARGIN_SECONDS = 5.0
MINUTE = 60.0

_DURATION = re.compile(r"(\d+(?:\.\d+)?)([hms]?)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "": 1.0}


def parse_duration(text: str) -> float:
    """Seconds in ``10m``, ``90s``, ``1h``, ``1h30m`` or plain seconds (``600``, ``7.5``);
    :class:`ValueError` for anything else, or for no time at all."""
    spaced = text.strip().lower().replace(" ", "")
    parts = _DURATION.findall(spaced)
    whole = "".join(number + unit for number, unit in parts) == spaced
    units = len(parts) == 1 or all(unit for _, unit in parts)  # 1h30m, not 1h30
    if not parts or not whole or not units:
        raise ValueError(f"{text!r} is not a duration: give 10m, 90s, 1h or seconds")
    seconds = sum(float(n) * _UNIT[u] for n, u in parts)
    if seconds <= 0:
        raise ValueError(f"{text!r}: the time budget must be more than 0 seconds")
    return seconds


@dataclass(frozen=True)
class Rate:
    """The rate limit a deployment announced: ``limit`` requests a ``window`` of seconds, with
    ``remaining`` of them left in the window that ends in ``reset`` seconds."""

    limit: int
    window: float
    remaining: int
    reset: float

    def allows(self, seconds: float) -> int:
        """Requests this rate allows in ``seconds`` from now: what is left of this window, then
        ``limit`` a window (the windows after the first counted in proportion)."""
        later = max(0.0, seconds - self.reset)
        return self.remaining + math.floor(self.limit * later / self.window)

    def describe(self) -> str:
        return f"{self.limit} requests per {self.window:g} s"


def read_rate(exchange: Exchange, stated_window: float = MINUTE) -> Rate | None:
    """The rate limit an authenticated response announces (None: it announces none)."""
    values = [exchange.header(f"x-ratelimit-{name}") for name in ("limit", "remaining", "reset")]
    if not all(v is not None and v.isdigit() for v in values):
        return None
    limit, remaining, reset = (int(v) for v in values if v is not None)
    if limit < 1:
        return None
    fresh = remaining == limit - 1 and reset > 0  # this request opened the window
    return Rate(limit, float(reset) if fresh else stated_window, remaining, float(reset))


@dataclass(frozen=True)
class Plan:
    """A run's budget: ``requests`` (None: unbounded) and why."""

    requests: int | None
    max_requests: int | None = None
    time_budget: float | None = None  # seconds, from the run's start
    time_left: float | None = None  # seconds left when the plan was made
    rate: Rate | None = None
    by_rate: int | None = None  # what the rate allows in the time left, less the margin
    probes: tuple[str, ...] = ()  # the rate-limit probes the run has: a window each
    window: int | None = None  # requests of one window (the announced, else the stated limit)

    def describe(self) -> str:
        """The plan as one line, for the report's notes and the progress output."""
        if self.requests is None:
            return (
                "the run is not planned (no rate limit bounds its time, no --max-requests): the "
                "time budget still ends it"
            )
        parts = []
        if self.time_budget is not None and self.time_left is not None:
            if self.rate is None:
                parts.append("no rate limit bounds its time")
            else:
                parts.append(
                    f"at the announced {self.rate.describe()}, {self.by_rate} requests fit in "
                    f"the {self.time_left:.0f} s left of the time budget "
                    f"({self.time_budget:.0f} s) less a margin of {margin(self.time_left):.0f} s"
                )
        if self.max_requests is not None:
            parts.append(f"--max-requests {self.max_requests}")
        why = "; ".join(parts)
        return (
            f"planned {self.requests} requests ({why}): first every check judges once, then the "
            f"deep checks add depth with what is left{self._probes_cost()}"
        )

    def _probes_cost(self) -> str:
        """What the rate-limit probes cost, stated (against a deployment)."""
        if not self.probes or self.window is None:
            return ""
        cost = (
            f"about one rate-limit window: {window_requests(self.window)} requests and up to "
            f"{MINUTE:.0f} s of waiting for Retry-After"
        )
        if len(self.probes) == 1:
            named = f"the rate-limit probe {self.probes[0]} costs {cost}"
        else:
            named = f"the rate-limit probes {' and '.join(self.probes)} cost each {cost}"
        return f"; {named}, taken after every other check has judged once"


def margin(seconds: float) -> float:
    """The time kept back from a time budget of ``seconds`` (see the module's docstring)."""
    return min(seconds, max(MIN_MARGIN_SECONDS, MARGIN * seconds))


def window_requests(limit: int) -> int:
    """The requests a rate-limit probe spends against a deployment at ``limit`` a window: the
    window, the refused one, and the ones before and after the wait."""
    return limit + 3


def plan_run(
    max_requests: int | None,
    time_budget: float | None = None,
    time_left: float | None = None,
    rate: Rate | None = None,
    probes: tuple[str, ...] = (),
    stated_limit: int | None = None,
) -> Plan:
    """The request budget: ``max_requests``, or less where the rate allows less in the time
    left (``time_left`` seconds of a ``time_budget``); ``probes``: the rate-limit probes the
    run has, whose cost the plan states (a window each: the announced limit, else
    ``stated_limit``)."""
    by_rate = None
    if rate is not None and time_left is not None:
        by_rate = max(1, rate.allows(time_left - margin(time_left)))
    bounds = [b for b in (max_requests, by_rate) if b is not None]
    return Plan(
        requests=min(bounds) if bounds else None,
        max_requests=max_requests,
        time_budget=time_budget,
        time_left=time_left,
        rate=rate,
        by_rate=by_rate,
        probes=probes,
        window=rate.limit if rate is not None else stated_limit,
    )


# -- spending order -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """One check's turn: the pass it runs in, and the requests it may send (None: any)."""

    check: Check
    phase: str
    allowance: int | None
    second: bool = False  # a later turn: a retry after the breadth pass, or the depth pass


def breadth_allowance(left: int, later: int) -> int:
    """What a check may spend in the breadth pass, with ``left`` requests and ``later`` checks
    after it: all but :data:`RESERVE` for each of them, and never less than an equal share."""
    return max(left // (later + 1), left - RESERVE * later)


def depth_allowance(left: int, later: int) -> int:
    """A deep check's fair share in the depth pass: ``left`` divided among it and the ``later``
    deep checks after it (what it does not use goes to them)."""
    return left // (later + 1)


def turns(
    checks: Sequence[Check],
    left: Callable[[], int | None],
    cut: Callable[[Check], bool],
    deepens: Callable[[Check], bool],
    reserved: Callable[[Check], bool] = lambda check: True,
) -> Iterator[Turn]:
    """The turns of a run, each allowance computed when its turn comes (``left()``: what the
    run may still send). Unbounded: every check once, whole. Bounded: the breadth pass; then
    the checks its allowances ``cut`` before they judged, again from the start, with all that
    is left but :data:`RESERVE` for each after them (judging once comes before any depth); then
    the depth pass for the checks that ``deepens`` names (the deep checks that may run).
    :data:`RESERVE` is kept back for each later check that ``reserved`` names (not for a
    rate-limit probe against a deployment: it takes a whole window of what is left when its
    turn comes, or is skipped)."""
    runnable = [c for c in checks if c.run is not None]
    if left() is None:
        yield from (Turn(c, WHOLE, None) for c in runnable)
        return
    for i, check in enumerate(runnable):
        later = sum(1 for c in runnable[i + 1 :] if reserved(c))
        allowance = breadth_allowance(left() or 0, later)
        yield Turn(check, _first_phase(check), allowance)
    retried = [c for c in runnable if cut(c)]
    for i, check in enumerate(retried):
        allowance = breadth_allowance(left() or 0, len(retried) - i - 1)
        yield Turn(check, _first_phase(check), allowance, second=True)
    deeper = [c for c in runnable if deepens(c)]
    for i, check in enumerate(deeper):
        allowance = depth_allowance(left() or 0, len(deeper) - i - 1)
        yield Turn(check, DEPTH, allowance, second=True)


def _first_phase(check: Check) -> str:
    return BREADTH if check.deep else WHOLE
