"""Model: a Hypothesis state machine drives the workspace and compares every answer with a model.

``model-workspace`` keeps a model of the workspace (the credits ledger, the calls made with an
Idempotency-Key, records after create and partial update, job lifecycles, cursor walks while
records are created, subscription deliveries) and holds the deployment to it; see
:mod:`conformance.model`. Randomness comes from the run's seed, so a seed makes the same requests
again. A broken rule is shrunk to the shortest failing sequence, reported with its requests as
curl commands and the command that runs it again. Against the bundled mock each example starts
from the mock's reset state, and the mock's clock moves the jobs.

Against a real deployment (``--allow-spend``) the model starts each example from what it reads,
changes only records it created, deletes the webhook subscriptions it made, and assumes that
nothing else spends the workspace's credits while it runs (else the ledger disagrees).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.errors import FlakyFailure, FlakyStrategyDefinition
from hypothesis.stateful import run_state_machine_as_test

from conformance.checks import check
from conformance.context import Context
from conformance.generation import salted
from conformance.model.machine import WorkspaceMachine, unavailable
from conformance.model.rules import RULES
from conformance.model.run import (
    Facts,
    ModelViolation,
    RunState,
    StopRun,
    plan_for,
    read_known,
)
from conformance.passes import BREADTH, DEPTH
from conformance.target import BudgetExhausted

FAMILY = "model"
NAME = "model-workspace"
UNSTABLE = "the deployment answered a replayed sequence differently (not shrunk)"
MOCK_ONLY = (
    "records that existed before the run are changed, and time, credits and prices moved, "
    "only against the bundled mock"
)


@check(
    NAME,
    FAMILY,
    "a model of the workspace (credits ledger, idempotent replays, partial updates, job "
    "lifecycles, cursor walks) predicts every answer of generated sequences; failures are shrunk",
    spends=True,
    creates=True,
    cost=17,
    deep=True,
)
def workspace(ctx: Context) -> None:
    """The model's examples: one in a bounded run's breadth pass, more (other draws) in its
    depth pass; the rules no pass judged are named once, at the end of the last."""
    facts = Facts.read(ctx)
    if ctx.session.mock is None and ctx.phase != DEPTH:
        ctx.skip(MOCK_ONLY)
    run = RunState(ctx, plan_for(ctx.target.remaining, one=ctx.phase == BREADTH), facts)
    try:
        if ctx.phase != DEPTH or not ctx.result.failures:  # a failure is shrunk once
            _explore(ctx, run, facts)
    finally:
        _outcomes(ctx, run)


def _explore(ctx: Context, run: RunState, facts: Facts) -> None:
    try:
        run.known = read_known(ctx, facts)
    except BudgetExhausted as exhausted:
        run.stopped = exhausted.reason
        return
    for reason in unavailable(run):  # rules their preconditions keep from ever running
        run.note(reason)
    machine = type("Workspace", (WorkspaceMachine,), {"run": run})
    hypothesis_seed(salted(ctx.seed, NAME if ctx.phase != DEPTH else f"{NAME}-depth"))(machine)
    try:
        run_state_machine_as_test(machine, settings=_settings(run))
    except ModelViolation as violation:
        _record(ctx, violation)
    except StopRun:
        if run.best is not None:  # shrinking stopped early: the shortest failure seen so far
            _record(ctx, run.best, shrunk=False)
    except (FlakyFailure, FlakyStrategyDefinition) as flaky:
        # Hypothesis calls a stop in mid-example flaky (its record of the choices wanted more);
        # else the deployment did answer a replayed sequence differently.
        if run.best is not None:
            _record(ctx, run.best, shrunk=False)
        elif not _caused_by_stop(flaky):
            ctx.warn(f"the deployment answered a replayed sequence differently: {flaky}"[:500])
            ctx.skip(UNSTABLE)


def _settings(run: RunState) -> settings:
    return settings(
        max_examples=run.plan.examples,
        stateful_step_count=run.plan.steps,
        deadline=None,
        database=None,
        derandomize=False,  # the seed decorator fixes the randomness to the run's seed
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        verbosity=Verbosity.normal,  # the falsifying program goes to the violation's notes
        print_blob=False,
    )


def _caused_by_stop(error: BaseException | None, depth: int = 0) -> bool:
    if error is None or depth > 20:
        return False
    if isinstance(error, StopRun):
        return True
    inner = [error.__context__, error.__cause__, *getattr(error, "exceptions", ())]
    return any(_caused_by_stop(e, depth + 1) for e in inner)


def reproduce(ctx: Context) -> str:
    """The command that runs this check again with the same seed against the same target."""
    session, target = ctx.session, ctx.target
    parts = ["conformance", "run"]
    if session.mock is not None:
        parts.append("--mock")
    else:
        parts += ["--base-url", target.base_url, "--api-key", '"$API_KEY"', "--allow-spend"]
    if target.max_requests is not None:
        parts += ["--max-requests", str(target.max_requests)]
    parts += ["--profile", ctx.profile, "--only", NAME, "--seed", str(ctx.seed)]
    return " ".join(parts)


def _record(ctx: Context, violation: ModelViolation, *, shrunk: bool = True) -> None:
    notes = getattr(violation, "__notes__", [])
    extra: dict[str, Any] = {
        "steps": violation.steps,
        "reproduce": reproduce(ctx),
        "program": [str(n) for n in notes if not str(n).startswith("Failing test case")],
        "shrunk": shrunk,
    }
    how = "shrunk to" if shrunk else "shrinking stopped early at"
    ctx.fail(
        violation.rule,
        f"{violation.message} ({how} a sequence of {len(violation.steps)} steps: its curl "
        "commands and the command that runs it again are in the report)",
        exchange=violation.exchange,
        quote=violation.quote,
        **extra,
    )


def _outcomes(ctx: Context, run: RunState) -> None:
    """This pass's judgements; after the last pass, the rules none judged and the notes."""
    for name in RULES:
        ctx.passed(run.judged[name])
    judged = ctx.kept.setdefault("judged", Counter())
    notes = ctx.kept.setdefault("notes", Counter())
    judged.update(run.judged)
    notes.update(run.notes)
    if run.stopped:
        ctx.skip(run.stopped)
    if ctx.phase == BREADTH:
        return  # the depth pass follows
    failed = {f.rule for f in ctx.result.failures}
    for name, rule in RULES.items():
        if not judged[name] and name not in failed:
            ctx.skip(f"{name}: {rule.unjudged}")
    for reason in sorted(notes):
        ctx.skip(reason)
