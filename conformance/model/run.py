"""What one run of the model shares across Hypothesis examples: the plan (examples, steps, the
budget kept for shrinking), the contract's facts, what each rule judged, and the first violation.
"""

from __future__ import annotations

import json
import shlex
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from conformance.context import Context
from conformance.contract import Operation
from conformance.generation import Prepared
from conformance.model import api
from conformance.model.rules import RULES
from conformance.target import BUDGET_USED_UP, BudgetExhausted, Exchange

DEFAULT_EXAMPLES = 12
DEFAULT_STEPS = 15
REQUESTS_PER_STEP = 3  # what one step costs on average (a walk costs more, a balance read one)
SHRINK_REPLAYS = 60  # examples shrinking may replay against the deployment
SHRINK_SECONDS = 30.0  # and the time it may take


class StopRun(BaseException):
    """Ends the whole Hypothesis run at once: the budget left is kept for a replay, or shrinking
    used the replays it may. (An example that silently did nothing would not draw what its
    choices drew before, and Hypothesis, replaying them, would call the test flaky.)"""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ModelViolation(AssertionError):
    """An answer of the deployment that the model's rule ``rule`` does not allow."""

    def __init__(self, rule: str, message: str, exchange: Exchange | None = None) -> None:
        super().__init__(f"[{rule}] {message}")
        self.rule = rule
        self.message = message
        self.exchange = exchange
        self.quote = RULES[rule].quote
        self.steps: list[str] = []


@dataclass(frozen=True)
class Plan:
    examples: int
    steps: int
    reserve: int  # requests kept for the replay of the shrunk sequence
    shrink_replays: int


def plan_for(remaining: int | None, *, one: bool = False) -> Plan:
    """Examples and steps for the budget left: the default run, or fewer when it is short;
    ``one`` example only (a bounded run's breadth pass: judge once)."""
    per_example = DEFAULT_STEPS * REQUESTS_PER_STEP + 2
    examples = 1 if one else DEFAULT_EXAMPLES
    if remaining is not None:
        examples = max(1, min(examples, (remaining - per_example) // per_example))
    return Plan(examples, DEFAULT_STEPS, per_example, SHRINK_REPLAYS)


@dataclass
class Facts:
    """What the contract tells the model, read once per run."""

    kinds: dict[str, api.Kind]
    paid: list[Operation]
    statuses: api.JobStatuses
    events: list[str]
    job_pointers: dict[str, list[str]]
    coverage: dict[str, bool | None]

    retention: float | None  # how long a deployment keeps an Idempotency-Key (contract limit)

    @classmethod
    def read(cls, ctx: Context) -> Facts:
        paid = [op for op in api.paid_operations(ctx) if ctx.why_not_send(op) is None]
        pointers = {op.operation_id: p for op in paid if (p := api.job_pointer(ctx, op))}
        return cls(
            kinds=api.kinds(ctx),
            paid=paid,
            statuses=api.job_statuses(ctx),
            events=api.subscription_events(ctx),
            job_pointers=pointers,
            coverage={op.operation_id: api.coverage(op) for op in paid},
            retention=ctx.contract.full.limits.get("idempotencyKeyRetentionSeconds"),
        )


def read_known(ctx: Context, facts: Facts) -> dict[str, list[str]]:
    """Ids the run reads once, before any example (so that every example, and every replay of
    one, makes the same requests): each kind's first page, and the connected accounts seen on
    them: ``accounts`` (a community campaign's own), ``all-accounts`` (any campaign's)."""
    known: dict[str, list[str]] = {"accounts": [], "all-accounts": []}
    for kind in facts.kinds.values():
        items = api.first_page(ctx, kind)
        known[kind.name] = [str(i["id"]) for i in items]
        for item in items:
            _add(known["accounts"], item.get("connectedAccountId"))
            for account in item.get("connectedAccountIds") or []:
                _add(known["all-accounts"], account)
    ctx.session.ids.ids_for("projectId")  # the project generated work is filed under
    return known


def _add(values: list[str], value: Any) -> None:
    if isinstance(value, str) and value not in values:
        values.append(value)


@dataclass
class Sent:
    """A call the model made with an Idempotency-Key, kept for a replay."""

    op: Operation
    prepared: Prepared
    exchange: Exchange
    resource: str | None
    at: float  # the seconds the model had moved the mock's clock when it was sent


@dataclass
class RunState:
    ctx: Context
    plan: Plan
    facts: Facts
    judged: Counter[str] = field(default_factory=Counter)
    notes: Counter[str] = field(default_factory=Counter)  # skip reasons, once per run each
    stopped: str | None = None  # why the budget ran out (what was left is kept for a replay)
    failing: bool = False  # a violation was seen: examples now are shrinking's replays
    failed_at: float = 0.0
    replays: int = 0
    longest: int = 0  # requests of the longest failing sequence seen (the report replays one)
    examples: int = 0
    best: ModelViolation | None = None  # the shortest violation seen
    known: dict[str, list[str]] = field(default_factory=dict)  # run-wide ids (fixtures)
    pools: dict[str, dict[str, list[Any]]] = field(default_factory=dict)

    @property
    def control(self) -> Any:
        return self.ctx.control if self.ctx.session.mock is not None else None

    def judge(self, rule: str) -> None:
        self.judged[rule] += 1

    def note(self, reason: str) -> None:
        self.notes[reason] += 1

    def budget_left(self) -> int | None:
        return self.ctx.target.remaining

    def violated(self, violation: ModelViolation) -> None:
        self.longest = max(self.longest, len(violation.steps))
        if not self.failing:
            self.failing, self.failed_at = True, time.monotonic()
        if self.best is None or len(violation.steps) <= len(self.best.steps):
            self.best = violation

    def begin_example(self, final: bool) -> None:
        """A new example may run; else :class:`StopRun`."""
        left = self.budget_left()
        if self.failing:
            if final:
                return
            self.replays += 1
            if (
                self.replays > self.plan.shrink_replays
                or time.monotonic() - self.failed_at > SHRINK_SECONDS
                # this replay may make an example's requests; the report's replay of the
                # shrunk sequence, no more than the longest failing sequence seen
                or (left is not None and left < self.plan.reserve + self.longest)
            ):
                raise StopRun("shrinking used the replays it may make")
            return
        self.keep_reserve()
        self.examples += 1

    def keep_reserve(self) -> None:
        """While no rule broke, the requests a replay of a failure needs are kept."""
        left = self.budget_left()
        if not self.failing and left is not None and left < self.plan.reserve:
            self.stopped = BUDGET_USED_UP
            raise StopRun(BUDGET_USED_UP)

    def out_of_budget(self, exhausted: BudgetExhausted) -> StopRun:
        """The budget ran out: the request budget, or the time (``exhausted.reason``)."""
        self.stopped = exhausted.reason
        return StopRun(exhausted.reason)


def control_curl(control: Any, method: str, path: str, body: Any = None) -> str:
    """The mock control-plane call a step made, as a curl command (its token as a variable)."""
    parts = ["curl", "-i", "-X", method]
    if control.headers:
        parts += ["-H", '"Authorization: Bearer ${MOCK_CONTROL_TOKEN}"']
    if body is not None:
        parts += ["-H", "'Content-Type: application/json'"]
        parts += ["--data-binary", shlex.quote(json.dumps(body))]
    parts.append(shlex.quote(control.base + path))
    return " ".join(parts)
