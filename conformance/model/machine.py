"""The state machine: the steps Hypothesis chooses, each a rule of :class:`WorkspaceMachine`.

Every step drives the deployment through the public API and holds each answer to the model kept
by :class:`conformance.model.base.WorkspaceModel`. What the server returns goes into bundles:
``records`` (records a PATCH may change: those created; the fixtures, against the mock, are
drawn with them), ``calls`` (calls made with an Idempotency-Key, to replay) and ``jobs`` (jobs
started); rules that need one take it as an argument. A rule that needs a state (a paid
operation in the contract, the mock's control plane, a price known) has a precondition, and the
reasons a run's contract keeps a rule from ever running are noted once, when the run starts
(:func:`unavailable`). The ledger and the job status rules are invariants, judged after every
step on what the steps read (an invariant makes no request). The rules that poll, end or read a
job make their own (a new job) when their argument is a :class:`New` one, and a replay makes
its call (a create, or a paid call), so that one step reproduces what they judge. Steps marked
mock-only use the bundled mock's control plane (its credits, prices, clock, job outcomes and
delivery flush).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    invariant,
    multiple,
    precondition,
    rule,
)

from conformance.checks.idempotency import resource_id
from conformance.contract import Operation
from conformance.model import api, requests
from conformance.model.base import Made, WorkspaceModel, delivered_event, ok
from conformance.model.compare import seen_twice, sequence_problems
from conformance.model.run import RunState, Sent, control_curl
from conformance.target import BudgetExhausted

# Seconds the mock's clock moves before a job is read: 60 first (the value the shrinker lowers
# towards), since a new job read after 0 s answers what its start did (queued), after 60 s it runs.
ADVANCES = (60, 0, 600, 3600)
CREDITS = (0, 60, 1_000_000)  # balances the mock's control plane sets
PRICES = (0, 1, 35, 400)  # prices the mock's control plane sets
PAGE_SIZES = (1, 2, 5)
WALK_PAGES = 4
VARIANTS = 4  # which of a request's generated bodies is sent: 0 to 3

records = Bundle("records")  # Made: records a PATCH may change
calls = Bundle("calls")  # Made: calls with an Idempotency-Key that succeeded
jobs = Bundle("jobs")  # Made: jobs started


def step(function: Callable[..., Any]) -> Callable[..., Any]:
    """A rule's body; the budget running out (or down to what a replay needs) ends the run."""

    @functools.wraps(function)
    def wrapper(self: WorkspaceModel, *args: Any, **kwargs: Any) -> Any:
        self.run.keep_reserve()
        self.steps_run += 1
        try:
            return function(self, *args, **kwargs)
        except BudgetExhausted as exhausted:
            raise self.run.out_of_budget(exhausted) from None

    return wrapper


@dataclass(frozen=True)
class New:
    """An argument that asks the rule for a new one (a record, a job, a call): made by
    ``operation`` (a kind's list path for a create), with the request's ``variant``."""

    operation: str
    variant: int = 0


def among(values: Callable[[WorkspaceMachine], list[Any]]) -> st.SearchStrategy[Any]:
    """One of the values this run's contract offers (kinds, operations, capabilities): a
    strategy built from the machine's state (a precondition keeps the list non-empty)."""
    return st.runner().flatmap(lambda machine: st.sampled_from(values(machine)))


def new(names: Callable[[WorkspaceMachine], list[str]]) -> Callable[[Any], list[New]]:
    """Each of ``names`` with each variant, the first variant of every name first: one draw
    chooses both (a step has few choices to delete or lower when Hypothesis shrinks)."""
    return lambda machine: [New(n, v) for v in range(VARIANTS) for n in names(machine)]


def drawn(
    bundle: Bundle[Any],
    wanted: Callable[[Made], bool] = bool,
    fresh: Callable[[Any], list[New]] | None = None,
) -> st.SearchStrategy[Any]:
    """A value of ``bundle`` that ``wanted`` accepts, in the order of ``held``; after
    ``fresh``'s :class:`New` values, if any (the rule makes a new one: one step then reproduces
    what it judges, and the shrinker lowers an argument towards them). Drawn from what the
    bundle holds now, so an empty bundle is never drawn from (a precondition says whether one
    may be)."""

    def choices(machine: WorkspaceMachine) -> st.SearchStrategy[Any]:
        held = [value for value in machine.held(bundle) if wanted(value)]
        return st.sampled_from([*(fresh(machine) if fresh else []), *held])

    return st.runner().flatmap(choices)


def holds(bundle: Bundle[Any], wanted: Callable[[Made], bool]) -> Callable[[Any], bool]:
    """A precondition: ``bundle`` holds a value ``wanted`` accepts."""

    def precondition(machine: Any) -> bool:
        return any(wanted(value) for value in machine.held(bundle))

    return precondition


def patchable(made: Made) -> bool:
    return made.patchable


def bindable(made: Made) -> bool:
    return made.products


def keyed(made: Made) -> bool:
    return made.sent is not None


def started(made: Made) -> bool:
    return made.job is not None


def mock_only(machine: Any) -> bool:
    return machine.run.control is not None


def unavailable(run: RunState) -> list[str]:
    """Why rules of the machine can never run in this run (its contract, its deployment): noted
    once, when the run starts, since their preconditions keep them from being chosen."""
    ctx, facts = run.ctx, run.facts
    kinds = facts.kinds.values()
    reasons = []
    if not any(k.create is not None and ctx.why_not_send(k.create) is None for k in kinds):
        reasons.append("no create may be called")
    if not facts.paid:
        reasons.append("no paid operation may be called")
    if not any(k.update is not None and ctx.why_not_send(k.update) is None for k in kinds):
        reasons.append("no update may be called")
    if not any(op.operation_id in facts.job_pointers for op in facts.paid):
        reasons.append("no paid operation that starts a job may be called")
    return reasons


class WorkspaceMachine(WorkspaceModel):
    """The steps: creating, paying, replaying, refusing then retrying, balance reads, partial
    updates, walks while creating, jobs polled, ended and their streams read, deliveries."""

    fixtures: list[Made] | None = None  # the example's records from before it (read once)

    # -- what each rule may choose from (this run's contract) ----------------------------------

    def creatable_names(self) -> list[str]:
        return [k.name for k in self.creatable()]

    def paid_names(self) -> list[str]:
        return self.standalone_first(self.facts.paid)

    def job_names(self) -> list[str]:
        return self.standalone_first(self.job_operations())

    def standalone_first(self, ops: list[Operation]) -> list[str]:
        """``ops``' names, those a call can succeed with alone first (the shrinker lowers a
        choice towards the first): fewest required ids that no kind of the run's records
        supplies (``jobId``: a job in some state), then fewest required body fields."""
        kinds = {path.rstrip("/").rsplit("/", 1)[-1] for path in self.facts.kinds}

        def key(op: Operation) -> tuple[int, int, str]:
            schema = op.body_schema
            required = self.ctx.held.flatten(schema)["required"] if schema is not None else []
            needs = [f for f in required if f.endswith("Id") and f"{f[:-2]}s" not in kinds]
            return len(needs), len(required), op.operation_id

        return [op.operation_id for op in sorted(ops, key=key)]

    def walkable(self) -> list[str]:
        return [k.name for k in self.creatable() if self.ctx.held.is_cursor_list(k.list_op)]

    def replay_new(self) -> list[New]:
        """The calls a replay may make first: a create of each kind, then each paid call."""
        return [New(k) for k in self.creatable_names()] + [New(p) for p in self.paid_names()]

    def call_now(self, call: New) -> Sent | None:
        """``call`` made now (a kind's create, or a paid operation): the call, if it succeeded."""
        if call.operation in self.facts.kinds:
            made = self.create_record(self.facts.kinds[call.operation], call.variant)
        else:
            made = self.pay_now(call)
        return made.sent if made is not None else None

    def pay_now(self, call: New) -> Made | None:
        op = self.ctx.held.operations[call.operation]
        prepared = requests.paid_request(
            self.ctx, op, call.variant, self.ctx.new_key(), self.options
        )
        if prepared is None:
            self.run.note("no request could be generated")
            return None
        return self.accept(op, prepared, self.ctx.send(prepared, op))

    def retry_ops(self) -> list[str]:
        """Creates, and the paid operations that succeeded in this example: each with a
        required body field a refused call leaves out."""
        creates = [k.create.operation_id for k in self.creatable() if k.create is not None]
        paid = [s.op.operation_id for s in self.sent if s.op.paid]
        return sorted(set(creates) | {p for p in paid if p in self.succeeded})

    # -- what a bundle holds ----------------------------------------------------------------------

    def held(self, bundle: Bundle[Any]) -> list[Any]:
        """What ``bundle`` holds, the newest first; for ``records``, after the records that
        existed before the example (against the mock: reset to them). Those come first since
        they never move: a step the shrinker deletes does not change which of them a draw
        picks (a create deleted before a PATCH of one), and a draw lowered towards them needs
        no create. They are no step of the example: an ``@initialize`` rule would be one,
        taking one of its steps, and the first step would no longer be forced, so Hypothesis
        would spend an example on none."""
        values = [self.names_to_values[ref.name] for ref in reversed(self.bundle(bundle.name))]
        if bundle is records:
            if self.fixtures is None:
                self.fixtures = self.fixture_records()
            values = [*self.fixtures, *values]
        return values

    # -- the invariants ---------------------------------------------------------------------------

    @invariant()
    def ledger_and_job_statuses(self) -> None:
        """The balances the steps read equal the model's; each job status read is in the
        closed set, and a job read terminal never reads otherwise (judged on what the steps
        read: no request of its own)."""
        self.judge_observed()

    # -- the rules --------------------------------------------------------------------------------

    @rule()
    @step
    def check_balance(self) -> None:
        """The balance read, where anything since the last read may have moved it (a paid
        call, credits set): reading it again when nothing could has nothing new to judge. (The
        rule Hypothesis shrinks a step towards: a step it cannot delete then costs no request.)"""
        if not self.balance_read:
            self.read_balance(judge=True)

    @precondition(lambda self: bool(self.creatable()))
    @rule(targets=(records, calls), record=among(new(lambda m: m.creatable_names())))
    @step
    def create(self, record: New) -> Any:
        made = self.create_record(self.facts.kinds[record.operation], record.variant)
        return made if made is not None else multiple()

    @precondition(lambda self: bool(self.facts.paid))
    @rule(call=among(new(lambda m: m.paid_names())))
    @step
    def pay(self, call: New) -> None:
        self.pay_now(call)

    @precondition(lambda self: bool(self.replay_new()) or holds(calls, keyed)(self))
    @rule(call=drawn(calls, keyed, fresh=lambda m: m.replay_new()))
    @step
    def replay(self, call: Made | New) -> None:
        """A call replayed with its Idempotency-Key: one the bundle holds, or a :class:`New`
        one made now (a create, or a paid call), as where the call drawn is past the key's
        retention (a record created now)."""
        sent = call.sent if isinstance(call, Made) else None
        if sent is None or sent not in self.replayable():
            fresh = call if isinstance(call, New) else next(iter(self.replay_new()), None)
            sent = self.call_now(fresh) if fresh is not None else None
            if sent is None:
                return
        if sent.op.paid and self.pending:
            self.read_balance(judge=True)
        again = self.ctx.send(sent.prepared, sent.op)
        again_id = resource_id(again.json())
        self.expect(
            again.status == sent.exchange.status and again_id == sent.resource,
            "replay",
            f"{sent.op.label} replayed with its Idempotency-Key answered {again.status} "
            f"{again_id!r}; the first call answered {sent.exchange.status} {sent.resource!r}",
            again,
        )
        if sent.op.paid and self.balance is not None:
            before = self.balance
            _, catalogue = api.read_catalogue(self.ctx)
            if catalogue is not None:
                self.expect(
                    catalogue.balance == before,
                    "replay",
                    f"the balance went from {before} to {catalogue.balance} on a replay of "
                    f"{sent.op.label}: a replay is not charged again",
                    again,
                )
                self.balance, self.prices = catalogue.balance, catalogue.prices

    @precondition(lambda self: bool(self.retry_ops()))
    @rule(call=among(new(lambda m: m.retry_ops())))
    @step
    def refuse_then_retry(self, call: New) -> None:
        op = self.ctx.held.operations[call.operation]
        key = self.ctx.new_key()
        prepared = self.request_for(op, call.variant, key)
        name = requests.required_field(self.ctx, op)
        refused = requests.without(prepared, name) if prepared and name else None
        if prepared is None or refused is None:
            self.run.note("no required body field to leave out")
            return
        first = self.ctx.send(refused, op)
        self.accept(op, refused, first)  # a refused call is charged nothing, in the model too
        if ok(first) or first.status >= 500:
            self.run.note(f"a request without its required {name} was not refused with a 4xx")
            return
        second = self.ctx.send(prepared, op)
        # Refused for its credits, a capability or an outage: that says nothing of the key.
        if not (second.status == 402 or second.capability_unavailable or second.status >= 500):
            self.expect(
                ok(second),
                "key-freed",
                f"{op.label} without {name} was refused ({first.status} {first.code}); the valid "
                f"call with the same Idempotency-Key then answered {second.status} {second.code}",
                second,
            )
        self.accept(op, prepared, second)

    @precondition(mock_only)
    @rule(amount=st.sampled_from(CREDITS))
    @step
    def set_credits(self, amount: int) -> None:
        if self.pending:
            self.read_balance(judge=True)
        workspace = self.ctx.session.mock.workspace
        self.control("PUT", f"/workspaces/{workspace}/credits", {"balance": amount})
        self.balance, self.balance_read = amount, False

    @precondition(lambda self: mock_only(self) and bool(self.prices))
    @rule(capability=among(lambda m: sorted(m.prices)), price=st.sampled_from(PRICES))
    @step
    def reprice(self, capability: str, price: int) -> None:
        self.control("PUT", f"/capabilities/{capability}", {"price": price})
        self.prices[capability] = price  # charges already made stay at the price they were quoted
        self.read_balance(judge=True)

    @precondition(holds(records, patchable))
    @rule(record=drawn(records, patchable), data=st.data())
    @step
    def update(self, record: Made, data: st.DataObject) -> None:
        """A PATCH of some writable fields of a record (the values: from pools this run reads
        from the contract and the records it made, so drawn here), read back."""
        assert record.kind is not None and record.record is not None
        self.patch(data, self.facts.kinds[record.kind], record.record)

    @precondition(holds(records, bindable))
    @rule(record=drawn(records, bindable), data=st.data())
    @step
    def bind_products(self, record: Made, data: st.DataObject) -> None:
        """A PATCH that sends ``products`` (a channel's): ``["none"]``, ``[]`` or ids."""
        assert record.kind is not None and record.record is not None
        self.patch(data, self.facts.kinds[record.kind], record.record, "products")

    @precondition(lambda self: bool(self.walkable()))
    @rule(kind=among(lambda m: m.walkable()), size=st.sampled_from(PAGE_SIZES))
    @step
    def walk(self, kind: str, size: int) -> None:
        walked = self.facts.kinds[kind]
        limit = api.page_size(walked.list_op, size)
        seen: list[str] = []
        cursor = None
        for page in range(WALK_PAGES):
            exchange = self.ctx.call(walked.list_op, params={"limit": limit, "cursor": cursor})
            body = exchange.json()
            if exchange.status != 200 or not isinstance(body, dict):
                self.run.note("a page of a walk was refused")
                return
            ids = [str(i["id"]) for i in body.get(walked.items) or []
                   if isinstance(i, dict) and "id" in i]  # fmt: skip
            twice = seen_twice(seen, ids)
            self.expect(
                not twice,
                "walk-once",
                f"{walked.list_op.label} walked with limit {limit} while records were created "
                f"answered {', '.join(twice[:5])} again on page {page + 1}",
                exchange,
            )
            seen += ids
            cursor = body.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return
            if page < WALK_PAGES - 1:
                self.create_record(walked, page)

    # -- jobs: each rule takes a job of the bundle, or (None) starts one ----------------------

    def job(self, job: Made | New) -> tuple[str | None, Any]:
        """The job the rule works on (one the bundle held, or a :class:`New` one started now),
        and what the rule returns to the ``jobs`` and ``calls`` bundles (the job it started)."""
        if isinstance(job, Made):
            return job.job, multiple()
        made = self.start_job(job.operation, job.variant)
        return (made.job, made) if made is not None else (None, multiple())

    @precondition(lambda self: bool(self.job_operations()))
    @rule(
        targets=(jobs, calls),
        job=drawn(jobs, started, fresh=new(lambda m: m.job_names())),
        seconds=st.sampled_from(ADVANCES),
    )
    @step
    def poll(self, job: Made | New, seconds: int) -> Any:
        job_id, made = self.job(job)
        if job_id is None:
            return made
        if self.run.control is not None:
            self.advance(seconds)
        self.read_job(job_id)
        return made

    @precondition(lambda self: mock_only(self) and bool(self.job_operations()))
    @rule(
        targets=(jobs, calls),
        job=drawn(jobs, started, fresh=new(lambda m: m.job_names())),
        status=among(lambda m: sorted(m.facts.statuses.terminal)),
    )
    @step
    def settle(self, job: Made | New, status: str) -> Any:
        job_id, made = self.job(job)
        if job_id is None or not self.end_job(job_id, status):
            return made
        self.read_job(job_id)
        self.advance(ADVANCES[-1])
        self.read_job(job_id)
        return made

    @precondition(lambda self: bool(self.job_operations()))
    @rule(
        targets=(jobs, calls),
        job=drawn(jobs, started, fresh=new(lambda m: m.job_names())),
        seconds=st.sampled_from(ADVANCES),
    )
    @step
    def read_events(self, job: Made | New, seconds: int) -> Any:
        job_id, made = self.job(job)
        if job_id is None:
            return made
        if self.run.control is not None:
            self.advance(seconds)
        model = self.jobs[job_id]
        op = self.ctx.held.operations[api.JOB_EVENTS]
        params = {"after": model.after, "limit": api.page_size(op, 5)}
        exchange = self.ctx.call(
            op, path_parameters={op.path_parameters[0].name: job_id}, params=params
        )
        body = exchange.json()
        events = body.get("events") if isinstance(body, dict) else None
        if exchange.status != 200 or not isinstance(events, list):
            self.run.note("a job's event stream could not be read")
            return made
        sequences = [e.get("sequence") for e in events if isinstance(e, dict)]
        problems = sequence_problems(model.after, sequences)
        self.expect(
            not problems,
            "event-sequence",
            f"the events of job {job_id} read after {model.after}: " + "; ".join(problems[:3]),
            exchange,
        )
        numbers = [s for s in sequences if isinstance(s, int)]
        model.after = max([model.after, *numbers])
        return made

    @precondition(lambda self: mock_only(self) and bool(self.delivery_ops()))
    @rule(
        targets=(jobs, calls),
        job=among(new(lambda m: m.delivery_ops())),
        status=among(lambda m: sorted(m.facts.statuses.terminal)),
    )
    @step
    def deliveries(self, job: New, status: str) -> Any:
        """A subscription, a job whose coverage the contract states, ended now; then every
        delivery this example's subscriptions received is judged."""
        control = self.run.control
        kind = self._kind_of(api.SUBSCRIBE)
        if not any(not s.changed for s in self.subscriptions.values()) and kind is not None:
            self.create_record(kind, 0)
        if not self.subscriptions:
            self.run.note("no webhook subscription could be created")
            return multiple()
        ops = self.job_operations(True) + self.job_operations(False)
        job_id, made = self.job(job) if ops else (None, multiple())
        if job_id is None or not self.end_job(job_id, status):
            return made
        self.read_job(job_id)
        self.controls.append(
            (len(self.ctx.target.exchanges), control_curl(control, "POST", "/deliveries/flush"))
        )
        if not control.flush_deliveries() or self.route is None:
            self.run.note("the mock's control plane cannot flush deliveries")
            return made
        delivered: set[tuple[str, str, str]] = set()
        for delivery in self.ctx.session.receiver().received(self.route):
            seen = delivered_event(delivery.body, delivery.header("x-service-subscription-id"))
            if seen is not None:
                delivered.add(seen)
                self._judge_delivery(*seen)
        self._judge_completeness(delivered)
        return made

    def delivery_ops(self) -> list[str]:
        """The job operations whose coverage the contract states (covered or not), in the order
        of the other job rules (those a call can succeed with alone first)."""
        return self.standalone_first(self.job_operations(True) + self.job_operations(False))
