"""Running the selected checks against a target.

:func:`run_checks` gives each check its turns: one in an unbounded run; in a bounded run a
breadth pass, then a depth pass for the deep checks, each turn within an allowance of the
request budget (conformance/plan.py). What a check sees while it runs (:class:`Session`,
:class:`Context`) is conformance/context.py's; why it skips, conformance/skips.py's.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from conformance.checks import Check
from conformance.context import Context, Session
from conformance.outcomes import CheckResult
from conformance.plan import Turn, turns
from conformance.skips import NEEDS_CREATE, NEEDS_SPEND, NOTHING_TO_JUDGE, Skip
from conformance.target import (
    BUDGET_USED_UP,
    BudgetExhausted,
    Exchange,
    SetupProblem,
    Target,
    TargetUnreachable,
)

# -- running ------------------------------------------------------------------------------------


Listener = Callable[[str, Any], None]


def run_checks(
    session: Session,
    checks: list[Check],
    on_event: Listener | None = None,
) -> list[CheckResult]:
    """Run ``checks`` (observers attached first); answer their results in the order given.

    Against a deployment (no control plane) the checks that have a ``prepare`` are prepared
    first, before any check runs (events ``prepare-start`` with the check, ``prepare-end`` with
    its result), and take their turn after the others of the breadth pass (before any depth):
    the long jobs their prepares start run while the other checks do. Against the bundled mock
    (its world reset before each check) a check's prepare runs right before the check itself.
    The listener hears ``check-start`` and ``check-end`` for each check's first turn, and
    ``depth-start`` and ``depth-end`` for its later turns in a bounded run (a retry after the
    breadth pass, the depth pass)."""
    emit = on_event or (lambda *_: None)
    results = {c.name: CheckResult(c.name, c.family, c.description) for c in checks}
    observers = [Context(session, c, results[c.name]) for c in checks if c.observe is not None]
    observe = _observing(observers, emit)
    session.target.observers.append(observe)
    session.target.on_wait = lambda wait: emit("wait", wait)
    contexts = {c.name: Context(session, c, results[c.name]) for c in checks}
    cut: set[str] = set()  # checks an allowance stopped before they judged

    def cut_short(check: Check) -> bool:
        return check.name in cut

    def deepens(check: Check) -> bool:
        return check.deep and _gate(session, check) is None

    try:
        runnable = [c for c in checks if c.run is not None]
        unprepared: set[str] = set()  # checks whose prepare was skipped or failed: not run
        if session.target.control is None:
            unprepared = _prepare_first(session, runnable, contexts, emit)
            runnable.sort(key=lambda c: c.prepare is not None)  # stable: the prepared last

        def reserved(check: Check) -> bool:  # a probe's window is not kept back from the others
            return not check.window or session.target.control is not None

        def left() -> int | None:
            return session.target.run_remaining

        for turn in turns(runnable, left, cut_short, deepens, reserved):
            if turn.check.name in unprepared:  # its result says why
                continue
            result = results[turn.check.name]
            emit("depth-start" if turn.second else "check-start", turn.check)
            _take(session, turn, contexts[turn.check.name], cut)
            emit("depth-end" if turn.second else "check-end", result)
    finally:
        session.target.observers.remove(observe)
        session.target.on_wait = None
        session.target.allow(None)
    _budget_notes(session.target, list(results.values()))
    for result in results.values():
        if not result.judgements and not result.skipped:
            result.skipped[NOTHING_TO_JUDGE] += 1  # never a vacuous pass
    return [results[c.name] for c in checks]


def _observing(observers: list[Context], emit: Listener) -> Callable[[Exchange], None]:
    """What the target calls with each exchange: every observer judges it (a crashing rule
    is reported as the check's failure, never fatal), and the listener hears of it."""

    def observe(exchange: Exchange) -> None:
        for ctx in observers:
            ctx.result.requests += 1
            ctx.result.ran = True
            try:
                assert ctx.check.observe is not None
                ctx.check.observe(ctx, exchange)
            except Exception as exc:  # a crashing rule is reported, not fatal
                ctx.fail("crash", f"the check crashed: {exc!r}", exchange=exchange, key=("crash",))
        emit("exchange", exchange)

    return observe


def _prepare_first(
    session: Session, runnable: list[Check], contexts: dict[str, Context], emit: Listener
) -> set[str]:
    """Against a deployment, every check's prepare before any check runs (events
    ``prepare-start`` and ``prepare-end``); the names of those whose prepare was skipped or
    failed (their results say why: they are not run)."""
    unprepared: set[str] = set()
    for check in (c for c in runnable if c.prepare is not None):
        emit("prepare-start", check)
        ctx = contexts[check.name]
        if _gated(session, check, ctx.result) or not _prepare(session, check, ctx.result, ctx):
            unprepared.add(check.name)
        emit("prepare-end", ctx.result)
    return unprepared


def _take(session: Session, turn: Turn, ctx: Context, cut: set[str]) -> None:
    """Run one turn of a check, within its allowance."""
    result = ctx.result
    before = result.skipped[BUDGET_USED_UP]
    ctx.phase = turn.phase
    session.target.allow(turn.allowance)
    try:
        run_one(session, turn.check, result, ctx)
    finally:
        session.target.allow(None)
    stopped = result.skipped[BUDGET_USED_UP] > before
    if stopped and not turn.second and not result.judgements and session.target.run_remaining:
        cut.add(turn.check.name)  # its allowance, not the run's budget, stopped it
        result.skipped[BUDGET_USED_UP] = before  # it runs again, with a fair share
        if not result.skipped[BUDGET_USED_UP]:
            del result.skipped[BUDGET_USED_UP]


def _budget_notes(target: Target, results: list[CheckResult]) -> None:
    """A check that judged shows no "request budget used up" (it reached its share of the
    budget, by design); the run's notes name those whose depth the budget cut short."""
    shortened = [r.name for r in results if r.judgements and r.skipped.pop(BUDGET_USED_UP, 0)]
    if shortened:
        target.notes.append(
            f"the request budget cut short the depth of {len(shortened)} checks that judged: "
            f"{', '.join(shortened)}"
        )


def run_one(
    session: Session, check: Check, result: CheckResult, ctx: Context | None = None
) -> None:
    """Run one check (or one turn of it, in ``ctx``): gated, the mock's world reset, prepared
    (unless the prepare phase did that already), then its ``run``."""
    target = session.target
    if _gated(session, check, result):
        return
    if target.control is not None:
        target.control.reset()
        target.forget_windows()
    # Against the mock the world was just reset: what an earlier turn prepared is gone.
    fresh = target.control is not None or check.name not in session.prepared
    unprepared = check.prepare is not None and fresh
    if unprepared and not _prepare(session, check, result, ctx):
        return
    assert check.run is not None
    _attempt(session, check, result, check.run, ctx)


def _prepare(
    session: Session, check: Check, result: CheckResult, ctx: Context | None = None
) -> bool:
    """Call ``check.prepare`` and keep what it answers for the check (``ctx.prepared``);
    False when it was skipped or failed (the reason is in ``result``)."""
    assert check.prepare is not None
    done, value = _attempt(session, check, result, check.prepare, ctx)
    if done:
        session.prepared[check.name] = value
    return done


def _attempt(
    session: Session,
    check: Check,
    result: CheckResult,
    step: Callable[[Context], Any],
    ctx: Context | None = None,
) -> tuple[bool, Any]:
    """Call ``step(ctx)``; (True, what it answered), or (False, None) with its skip or failure
    recorded in ``result``. Its requests count towards the check's."""
    target = session.target
    ctx = ctx or Context(session, check, result)
    before = target.count
    target.current_check = check.name
    try:
        return True, step(ctx)
    except Skip as skip:
        ctx.skip(skip.reason)
    except BudgetExhausted as exc:  # the request budget, the check's allowance, or the time
        ctx.skip(exc.reason)
    except TargetUnreachable as exc:
        ctx.fail("transport", f"the deployment did not answer: {exc}")
    except SetupProblem:  # the run cannot judge as set up: it ends (api.run), judging nothing
        raise
    except Exception as exc:  # one crashing check does not end the run
        ctx.fail("crash", f"the check crashed: {exc!r}", trace=traceback.format_exc())
    finally:
        target.current_check = None
        if check.observe is None:  # an observer counts the responses it judged instead
            result.requests += target.count - before
    return False, None


def _gated(session: Session, check: Check, result: CheckResult) -> bool:
    """Whether the run may not run ``check`` (the reason recorded as its skip)."""
    result.ran = True
    reason = _gate(session, check)
    if reason:
        result.skipped[reason] += 1
    return reason is not None


def _gate(session: Session, check: Check) -> str | None:
    if check.spends and not session.allow_writes:
        return NEEDS_SPEND
    if check.creates and not session.allow_writes:
        return NEEDS_CREATE
    if check.needs_second_key and not session.target.second_key:
        return "needs --second-key"
    return None
