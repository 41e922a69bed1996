"""The state machine: the steps Hypothesis chooses, each a rule of :class:`WorkspaceMachine`.

Every step drives the deployment through the public API and holds each answer to the model kept
by :class:`conformance.model.base.WorkspaceModel`. Steps that need something (a job, a record, a
call to replay) make it first, so that every step can judge whatever Hypothesis enables. Steps
marked mock-only use the bundled mock's control plane (its credits, prices, clock, job outcomes
and delivery flush).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from conformance.checks.idempotency import resource_id
from conformance.model import api, requests
from conformance.model.base import (
    WorkspaceModel,
    delivered_event,
    ok,
    pick_kind,
    pick_operation,
)
from conformance.model.compare import seen_twice, sequence_problems
from conformance.model.run import control_curl
from conformance.target import BudgetExhausted

ADVANCES = (0, 60, 600, 3600)  # seconds the mock's clock moves before a job is read
CREDITS = (0, 60, 1_000_000)  # balances the mock's control plane sets
PRICES = (0, 1, 35, 400)  # prices the mock's control plane sets
PAGE_SIZES = (1, 2, 5)
WALK_PAGES = 4


def step(function: Callable[..., None]) -> Callable[..., None]:
    """A rule's body; the budget running out (or down to what a replay needs) ends the run."""

    @functools.wraps(function)
    def wrapper(self: WorkspaceModel, *args: Any, **kwargs: Any) -> None:
        self.run.keep_reserve()
        self.steps_run += 1
        try:
            function(self, *args, **kwargs)
        except BudgetExhausted as exhausted:
            raise self.run.out_of_budget(exhausted) from None

    return wrapper


class WorkspaceMachine(WorkspaceModel):
    """The steps: creating, paying, replaying, refusing then retrying, balance reads, partial
    updates, walks while creating, jobs polled, ended and their streams read, deliveries."""

    @rule(data=st.data())
    @step
    def create(self, data: st.DataObject) -> None:
        kinds = self.creatable()
        if not kinds:
            self.run.note("no create may be called")
            return
        kind = pick_kind(data, kinds)
        self.create_record(kind, data.draw(st.integers(0, 3), label="variant"))

    @rule(data=st.data())
    @step
    def pay(self, data: st.DataObject) -> None:
        if not self.facts.paid:
            self.run.note("no paid operation may be called")
            return
        op = pick_operation(data, self.facts.paid)
        n = data.draw(st.integers(0, 3), label="variant")
        prepared = requests.paid_request(self.ctx, op, n, self.ctx.new_key(), self.options)
        if prepared is None:
            self.run.note("no request could be generated")
            return
        self.accept(op, prepared, self.ctx.send(prepared, op))

    @rule()
    @step
    def check_balance(self) -> None:
        self.read_balance(judge=True)

    @rule(data=st.data())
    @step
    def replay(self, data: st.DataObject) -> None:
        if not self.replayable():
            kinds = self.creatable()
            if not kinds:
                return
            self.create_record(pick_kind(data, kinds), 0)
        calls = self.replayable()
        if not calls:
            return
        sent = calls[data.draw(st.integers(0, len(calls) - 1), label="call")]
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

    @rule(data=st.data())
    @step
    def refuse_then_retry(self, data: st.DataObject) -> None:
        creates = [k.create for k in self.creatable() if k.create is not None]
        paid = [s.op for s in self.sent if s.op.paid and s.op.operation_id in self.succeeded]
        ops = sorted(
            {o.operation_id: o for o in creates + paid}.values(), key=lambda o: o.operation_id
        )
        if not ops:
            return
        op = pick_operation(data, ops)
        key = self.ctx.new_key()
        prepared = self.request_for(op, data.draw(st.integers(0, 3), label="variant"), key)
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

    @precondition(lambda self: self.run.control is not None)
    @rule(data=st.data())
    @step
    def set_credits(self, data: st.DataObject) -> None:
        if self.pending:
            self.read_balance(judge=True)
        amount = data.draw(st.sampled_from(CREDITS), label="credits")
        workspace = self.ctx.session.mock.workspace
        self.control("PUT", f"/workspaces/{workspace}/credits", {"balance": amount})
        self.balance = amount

    @precondition(lambda self: self.run.control is not None and bool(self.prices))
    @rule(data=st.data())
    @step
    def reprice(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.prices)), label="capability")
        price = data.draw(st.sampled_from(PRICES), label="price")
        self.control("PUT", f"/capabilities/{name}", {"price": price})
        self.prices[name] = price  # charges already made stay at the price they were quoted
        self.read_balance(judge=True)

    @rule(data=st.data())
    @step
    def update(self, data: st.DataObject) -> None:
        kinds = self.updatable()
        if not kinds:
            self.run.note("no update may be called")
            return
        self.patch(data, pick_kind(data, kinds))

    @rule(data=st.data())
    @step
    def bind_products(self, data: st.DataObject) -> None:
        """A PATCH that sends ``products`` (a channel's): ``["none"]``, ``[]`` or ids."""
        kinds = [k for k in self.updatable() if "products" in k.writable]
        if kinds:
            self.patch(data, pick_kind(data, kinds), "products")

    @rule(data=st.data())
    @step
    def walk(self, data: st.DataObject) -> None:
        kinds = [k for k in self.creatable() if self.ctx.held.is_cursor_list(k.list_op)]
        if not kinds:
            return
        kind = pick_kind(data, kinds)
        limit = api.page_size(kind.list_op, data.draw(st.sampled_from(PAGE_SIZES), label="limit"))
        seen: list[str] = []
        cursor = None
        for page in range(WALK_PAGES):
            exchange = self.ctx.call(kind.list_op, params={"limit": limit, "cursor": cursor})
            body = exchange.json()
            if exchange.status != 200 or not isinstance(body, dict):
                self.run.note("a page of a walk was refused")
                return
            ids = [str(i["id"]) for i in body.get(kind.items) or []
                   if isinstance(i, dict) and "id" in i]  # fmt: skip
            twice = seen_twice(seen, ids)
            self.expect(
                not twice,
                "walk-once",
                f"{kind.list_op.label} walked with limit {limit} while records were created "
                f"answered {', '.join(twice[:5])} again on page {page + 1}",
                exchange,
            )
            seen += ids
            cursor = body.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return
            if page < WALK_PAGES - 1:
                self.create_record(kind, page)

    @rule(data=st.data())
    @step
    def poll(self, data: st.DataObject) -> None:
        job_id = self.pick_job(data)
        if job_id is None:
            return
        if self.run.control is not None:
            self.advance(data.draw(st.sampled_from(ADVANCES), label="seconds"))
        self.read_job(job_id)

    @precondition(lambda self: self.run.control is not None)
    @rule(data=st.data())
    @step
    def settle(self, data: st.DataObject) -> None:
        job_id = self.pick_job(data)
        status = data.draw(st.sampled_from(sorted(self.facts.statuses.terminal)), label="status")
        if job_id is None or not self.end_job(job_id, status):
            return
        self.read_job(job_id)
        self.advance(ADVANCES[-1])
        self.read_job(job_id)

    @rule(data=st.data())
    @step
    def read_events(self, data: st.DataObject) -> None:
        job_id = self.pick_job(data)
        if job_id is None:
            return
        if self.run.control is not None:
            self.advance(data.draw(st.sampled_from(ADVANCES), label="seconds"))
        job = self.jobs[job_id]
        op = self.ctx.held.operations[api.JOB_EVENTS]
        params = {"after": job.after, "limit": api.page_size(op, 5)}
        exchange = self.ctx.call(
            op, path_parameters={op.path_parameters[0].name: job_id}, params=params
        )
        body = exchange.json()
        events = body.get("events") if isinstance(body, dict) else None
        if exchange.status != 200 or not isinstance(events, list):
            self.run.note("a job's event stream could not be read")
            return
        sequences = [e.get("sequence") for e in events if isinstance(e, dict)]
        problems = sequence_problems(job.after, sequences)
        self.expect(
            not problems,
            "event-sequence",
            f"the events of job {job_id} read after {job.after}: " + "; ".join(problems[:3]),
            exchange,
        )
        numbers = [s for s in sequences if isinstance(s, int)]
        job.after = max([job.after, *numbers])

    @precondition(lambda self: self.run.control is not None)
    @rule(data=st.data())
    @step
    def deliveries(self, data: st.DataObject) -> None:
        """A subscription, a job whose coverage the contract states, ended now; then every
        delivery this example's subscriptions received is judged."""
        control = self.run.control
        kind = self._kind_of(api.SUBSCRIBE)
        if not any(not s.changed for s in self.subscriptions.values()) and kind is not None:
            self.create_record(kind, 0)
        if not self.subscriptions:
            self.run.note("no webhook subscription could be created")
            return
        ops = self.job_operations(True) + self.job_operations(False)
        job_id = self.pick_job(data, ops)
        status = data.draw(st.sampled_from(sorted(self.facts.statuses.terminal)), label="status")
        if job_id is None or not self.end_job(job_id, status):
            return
        self.read_job(job_id)
        self.controls.append(
            (len(self.ctx.target.exchanges), control_curl(control, "POST", "/deliveries/flush"))
        )
        if not control.flush_deliveries() or self.route is None:
            self.run.note("the mock's control plane cannot flush deliveries")
            return
        delivered: set[tuple[str, str, str]] = set()
        for delivery in self.ctx.session.receiver().received(self.route):
            seen = delivered_event(delivery.body, delivery.header("x-service-subscription-id"))
            if seen is not None:
                delivered.add(seen)
                self._judge_delivery(*seen)
        self._judge_completeness(delivered)
