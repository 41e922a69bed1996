"""The model of the workspace one example keeps, and how answers are held to it.

Each example starts from a known state (against the bundled mock its state is reset; against a
real deployment the model starts from what it reads) and keeps a model of the workspace: the
credit balance and the prices quoted, the calls made with an Idempotency-Key, the records it read
or changed, the jobs it started and the subscriptions it made. An answer that disagrees
with the model raises :class:`ModelViolation`, naming the rule it broke. The rules (the steps
Hypothesis chooses) are in :mod:`conformance.model.machine`.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import RuleBasedStateMachine

from conformance.checks.idempotency import resource_id
from conformance.contract import Operation
from conformance.generation import Prepared
from conformance.model import api, requests
from conformance.model.compare import (
    expected_charge,
    shown,
    update_problems,
)
from conformance.model.rules import PARTIAL_UPDATE_DEFAULT, PARTIAL_UPDATE_QUOTES, TERMINAL_EVENTS
from conformance.model.run import ModelViolation, RunState, Sent, control_curl
from conformance.target import BudgetExhausted, Exchange


@dataclass
class JobModel:
    operation: str
    covered: bool | None  # whether its events reach subscriptions (None: not stated)
    born: int  # when it was started, among what the example made
    started: Exchange  # the call that started it
    status: str | None = None
    after: int = 0  # the last event sequence read
    final: str | None = None  # the terminal status it was first read in (the invariant's)


@dataclass(frozen=True)
class Made:
    """What a step made, as its bundles hold it: a record (its kind's list path and its id), a
    job, and the call with an Idempotency-Key that made it (None: a fixture record)."""

    kind: str | None = None
    record: str | None = None
    job: str | None = None
    sent: Sent | None = None
    patchable: bool = False  # a record a PATCH may change in this run
    products: bool = False  # one whose products a PATCH may bind


@dataclass(frozen=True)
class Observed:
    """An answer a rule read, kept for an invariant to judge: a balance (``ledger``) or a job's
    status (``job-status``, ``terminal-final``)."""

    rule: str
    exchange: Exchange | None
    job: str | None = None
    status: Any = None
    shown: int | None = None  # the balance the deployment shows
    expected: int | None = None  # the model's
    message: str = ""


@dataclass
class SubscriptionModel:
    born: int
    events: set[str] = field(default_factory=set)  # every event set it ever had
    changed: bool = False


def _is_final() -> bool:
    """Whether Hypothesis is replaying the shrunk failing example (the one it reports)."""
    try:
        return bool(current_build_context().is_final)
    except InvalidArgument:  # outside a build context
        return False


def ok(exchange: Exchange) -> bool:
    return 200 <= exchange.status < 300


class WorkspaceModel(RuleBasedStateMachine):
    """The model of one example and what keeps it (no rules: :mod:`conformance.model.machine`
    has them)."""

    run: ClassVar[RunState]

    def __init__(self) -> None:
        super().__init__()
        self.ctx = self.run.ctx
        self.facts = self.run.facts
        self.start = len(self.ctx.target.exchanges)
        self.controls: list[tuple[int, str]] = []
        self.steps_run = 0
        self.moments = 0  # orders what the example made (a subscription before a job)
        self.elapsed = 0.0  # seconds the example moved the mock's clock
        self.failed = False
        self.balance: int | None = None
        self.prices: dict[str, int] = {}
        self.options: dict[str, list[str]] = {}
        self.pending: list[Exchange] = []  # paid calls since the balance was last read
        self.balance_read = False  # a step read the balance since anything could move it
        self.sent: list[Sent] = []
        self.succeeded: set[str] = set()
        self.jobs: dict[str, JobModel] = {}
        self.records: dict[str, dict[str, dict[str, Any]]] = {}
        self.created: dict[str, list[str]] = {}
        self.subscriptions: dict[str, SubscriptionModel] = {}
        self.route: str | None = None
        self.url: str | None = None
        self.observed: list[Observed] = []  # answers the invariants judge after the step
        self.run.begin_example(_is_final())
        try:
            self._open()
        except BudgetExhausted as exhausted:
            raise self.run.out_of_budget(exhausted) from None

    # -- the example's life ---------------------------------------------------------------------

    def _open(self) -> None:
        control = self.run.control
        if control is not None:
            control.reset()
            self.ctx.target.forget_windows()
            self.controls.append(
                (len(self.ctx.target.exchanges), control_curl(control, "POST", "/reset"))
            )
        self.read_balance(judge=False)
        self.balance_read = False  # where the example starts from: no step has judged it yet

    def tick(self) -> int:
        self.moments += 1
        return self.moments

    def teardown(self) -> None:
        if self.failed:
            return
        try:
            if self.pending:
                self.read_balance(judge=True)
            self.judge_observed()
            if self.run.control is None:
                self._remove_subscriptions()
        except BudgetExhausted as exhausted:
            raise self.run.out_of_budget(exhausted) from None

    def _remove_subscriptions(self) -> None:
        kind = self._kind_of(api.SUBSCRIBE)
        remove = next(
            (
                op
                for op in self.ctx.held.operations.values()
                if kind is not None and kind.read is not None
                and op.method == "DELETE" and op.path == kind.read.path
            ),
            None,
        )  # fmt: skip
        if remove is None:
            return
        for record_id in self.subscriptions:
            name = remove.path_parameters[0].name
            self.ctx.call(remove, path_parameters={name: record_id})

    # -- judging --------------------------------------------------------------------------------

    def expect(
        self,
        holds: bool,
        rule: str,
        message: str,
        exchange: Exchange | None = None,
        quote: str | None = None,
    ) -> None:
        if holds:
            self.run.judge(rule)
            return
        violation = ModelViolation(rule, message, exchange)
        if quote:
            violation.quote = quote
        violation.steps = self.curls()
        self.failed = True
        self.run.violated(violation)
        raise violation

    def curls(self) -> list[str]:
        """This example's requests so far, control-plane calls in their place, as curl."""
        steps: list[str] = []
        controls = list(self.controls)
        for index, exchange in enumerate(self.ctx.target.exchanges[self.start :], self.start):
            while controls and controls[0][0] <= index:
                steps.append(controls.pop(0)[1])
            steps.append(exchange.curl())
        return steps + [text for _, text in controls]

    def control(self, method: str, path: str, body: Any = None) -> Any:
        control = self.run.control
        self.controls.append(
            (len(self.ctx.target.exchanges), control_curl(control, method, path, body))
        )
        return control.call(method, path, body)

    # -- the ledger -----------------------------------------------------------------------------

    def read_balance(self, *, judge: bool) -> None:
        exchange, catalogue = api.read_catalogue(self.ctx)
        if catalogue is None:
            self.run.note("GET /v1/capabilities answers no balance: the ledger is not kept")
            self.balance = None
            return
        if judge and self.balance is not None:
            used = {
                str(line.get("capability"))
                for ex in self.pending
                for line in ((ex.json() or {}).get("cost") or {}).get("lines") or []
                if isinstance(line, dict)
            } if self.pending else set()  # fmt: skip
            moved = {c for c in used if catalogue.prices.get(c) != self.prices.get(c)}
            if moved:
                self.run.note("a price moved between a call and the balance read: not judged")
            else:
                calls = "; ".join(f"{e.method} {e.path} → {e.status}" for e in self.pending)
                self.observed.append(
                    Observed(
                        "ledger",
                        exchange,
                        shown=catalogue.balance,
                        expected=self.balance,
                        message=f"the balance is {catalogue.balance}; the model expects "
                        f"{self.balance} (calls since the last read: {calls or 'none'})",
                    )
                )
        self.balance = catalogue.balance
        self.prices = catalogue.prices
        self.options = catalogue.options
        self.pending = []
        self.balance_read = True

    def account(self, op: Operation, exchange: Exchange) -> None:
        """A paid call answered: its charge (or none, refused) goes into the model's ledger."""
        self.pending.append(exchange)
        self.balance_read = False
        if exchange.status >= 500 and not exchange.capability_unavailable:
            self.balance = None  # unknown until read again
            return
        if not ok(exchange):
            return  # nothing is charged for a call that did not succeed
        body = exchange.json()
        cost = body.get("cost") if isinstance(body, dict) else None
        charge, problems = expected_charge(cost, self.prices)
        if charge is not None:
            self.expect(not problems, "ledger", f"{op.label}: " + "; ".join(problems), exchange)
        else:
            self.run.note("a paid answer does not itemise its cost at catalogue prices")
            self.balance = None
            return
        if self.balance is not None:
            self.balance -= charge
            after = cost.get("balance") if isinstance(cost, dict) else None
            if isinstance(after, int) and not isinstance(after, bool):
                self.observed.append(
                    Observed(
                        "ledger",
                        exchange,
                        shown=after,
                        expected=self.balance,
                        message=f"{op.label} charged {charge} at the catalogue's prices; its "
                        f"answer says the balance is {after}, the model expects {self.balance}",
                    )
                )

    # -- calls ----------------------------------------------------------------------------------

    def _kind_of(self, operation_id: str) -> api.Kind | None:
        return next(
            (k for k in self.facts.kinds.values()
             if k.create is not None and k.create.operation_id == operation_id),
            None,
        )  # fmt: skip

    def fill(self, op: Operation) -> dict[str, Any] | None:
        """What a create needs from the run (None: it cannot be made in this run)."""
        if op.operation_id == api.SUBSCRIBE:
            url = self.receiver_url()
            return None if url is None else {"url": url, "events": list(self.facts.events)}
        if op.operation_id == api.COMMUNITY:
            accounts = self.known("accounts")
            return {"connectedAccountId": accounts[0]} if accounts else None
        return {}

    def receiver_url(self) -> str | None:
        session = self.ctx.session
        if session.mock is None and not session.receiver_url:
            return None
        if self.url is None:
            self.route = f"/conformance/model/{secrets.token_hex(6)}"
            self.url = session.receiver().route(self.route)
        return self.url

    def request_for(self, op: Operation, n: int, key: str) -> Prepared | None:
        if op.paid:
            return requests.paid_request(self.ctx, op, n, key, self.options)
        fill = self.fill(op)
        return None if fill is None else requests.create_request(self.ctx, op, n, key, fill)

    def accept(self, op: Operation, prepared: Prepared, exchange: Exchange) -> Made | None:
        """A call with a key answered: the model learns what it made and what it cost (None:
        it made nothing)."""
        if op.paid:
            self.account(op, exchange)
        if not ok(exchange):
            return None
        body = exchange.json()
        self.succeeded.add(op.operation_id)
        sent = Sent(op, prepared, exchange, resource_id(body), self.elapsed)
        self.sent.append(sent)
        made = Made(sent=sent)
        pointer = self.facts.job_pointers.get(op.operation_id)
        job_id = api.pointer(body, pointer) if pointer else None
        if isinstance(job_id, str):
            self.jobs[job_id] = JobModel(
                op.operation_id, self.facts.coverage.get(op.operation_id), self.tick(), exchange
            )
            job = api.pointer(body, pointer[:-1]) if pointer else None
            if isinstance(job, dict) and "status" in job:
                self.judge_status(job_id, job.get("status"), exchange)
            made = Made(job=job_id, sent=sent)
        kind = self._kind_of(op.operation_id)
        record = api.record_in(body)
        if kind is not None and record is not None:
            made = self.made(kind, record["id"], sent)
            self.records.setdefault(kind.name, {})[record["id"]] = record
            self.created.setdefault(kind.name, []).append(record["id"])
            if op.operation_id == api.SUBSCRIBE:
                events = record.get("events") or self.facts.events
                self.subscriptions[record["id"]] = SubscriptionModel(
                    self.tick(), set(events) if isinstance(events, list) else set()
                )
        return made

    def known(self, what: str) -> list[str]:
        return list(self.run.known.get(what, []))

    def creatable(self) -> list[api.Kind]:
        return [
            k for k in self.facts.kinds.values()
            if k.create is not None and self.ctx.why_not_send(k.create) is None
        ]  # fmt: skip

    def create_record(self, kind: api.Kind, n: int) -> Made | None:
        """A record of ``kind`` created (variant ``n``): what it made (None: nothing)."""
        assert kind.create is not None
        prepared = self.request_for(kind.create, n, self.ctx.new_key())
        if prepared is None:
            self.run.note(f"{kind.create.label} cannot be called in this run")
            return None
        exchange = self.ctx.send(prepared, kind.create)
        return self.accept(kind.create, prepared, exchange)

    # -- records ---------------------------------------------------------------------------------

    def updatable(self) -> list[api.Kind]:
        return [
            k for k in self.facts.kinds.values()
            if k.update is not None and self.ctx.why_not_send(k.update) is None
        ]  # fmt: skip

    def fixture_records(self) -> list[Made]:
        """The records that existed before the run that a PATCH may change: none unless the
        mock's control plane resets them before each example."""
        if self.run.control is None:
            return []
        return [self.made(k, i) for k in self.updatable() for i in self.known(k.name)]

    def made(self, kind: api.Kind, record_id: str, sent: Sent | None = None) -> Made:
        patchable = kind in self.updatable()
        products = patchable and "products" in kind.writable
        return Made(kind.name, record_id, sent=sent, patchable=patchable, products=products)

    def ids_of_items(self, items: str) -> list[str]:
        """Ids of the records listed under ``items`` (``products``): read and created."""
        ids: list[str] = []
        for kind in self.facts.kinds.values():
            if kind.items == items:
                ids += self.known(kind.name) + self.created.get(kind.name, [])
        return ids

    def pool(self, kind: api.Kind) -> dict[str, list[Any]]:
        assert kind.update is not None
        key = kind.update.operation_id
        if key not in self.run.pools:
            self.run.pools[key] = requests.value_pool(self.ctx, kind.update)
        pool = dict(self.run.pools[key])
        if "products" in pool:
            products = self.ids_of_items("products")
            pool["products"] = requests.products_values(products)
        if "connectedAccountIds" in pool:
            pool["connectedAccountIds"] = requests.id_lists(self.known("all-accounts"))
        if "url" in pool:
            url = (
                self.receiver_url()
                if kind.create and kind.create.operation_id == api.SUBSCRIBE
                else None
            )
            pool["url"] = [url] if url else []
        return {name: values for name, values in pool.items() if values}

    def patch(
        self, data: st.DataObject, kind: api.Kind, record_id: str, first: str | None = None
    ) -> None:
        """PATCH some writable fields of a record (``first`` among them), then read it back."""
        assert kind.update is not None
        before = self.records.get(kind.name, {}).get(record_id)
        if before is None:
            _, before = api.read_record(self.ctx, kind, record_id)
            if before is None:
                self.run.note("a record to update could not be read")
                return
        pool = self.pool(kind)
        fields = [name for name in kind.writable if name in pool and name != first]
        most = 3 if first is None else 1
        chosen = ([first] if first in pool else []) + data.draw(
            st.lists(st.sampled_from(fields), min_size=1 if first is None else 0,
                     max_size=most, unique=True),
            label="fields",
        )  # fmt: skip
        body = {name: data.draw(st.sampled_from(pool[name]), label=name) for name in chosen}
        if not body:
            return
        name = kind.update.path_parameters[0].name
        exchange = self.ctx.call(kind.update, path_parameters={name: record_id}, json_body=body)
        if not ok(exchange):
            self.records.get(kind.name, {}).pop(record_id, None)
            return
        if record_id in self.subscriptions:
            self.subscriptions[record_id].changed = True
        read, after = api.read_record(self.ctx, kind, record_id)
        if after is None:
            self.run.note("an updated record could not be read back")
            return
        self.judge_update(kind, before, body, read, after)
        self.records.setdefault(kind.name, {})[record_id] = after
        if record_id in self.subscriptions and isinstance(after.get("events"), list):
            self.subscriptions[record_id].events |= set(after["events"])

    def judge_update(
        self,
        kind: api.Kind,
        before: dict[str, Any],
        sent: dict[str, Any],
        read: Exchange,
        after: dict[str, Any],
    ) -> None:
        assert kind.update is not None
        products = sent.get("products")
        if products in (["none"], []) and "products" in after:
            self.expect(
                after["products"] == products,
                "products-none",
                f"products was sent as {shown(products)} and reads back as "
                f"{shown(after['products'])}",
                read,
            )
        problems = update_problems(before, sent, after, kind.writable, kind.write_only)
        self.expect(
            not problems,
            "partial-update",
            f"{kind.update.label} with {shown(sent, 300)}, read back: " + "; ".join(problems),
            read,
            PARTIAL_UPDATE_QUOTES.get(kind.update.operation_id, PARTIAL_UPDATE_DEFAULT),
        )

    # -- jobs ------------------------------------------------------------------------------------

    def judge_status(self, job_id: str, status: Any, exchange: Exchange) -> None:
        """A job's status read: the model takes it now; the invariants judge it after the step."""
        self.observed.append(Observed("job-status", exchange, job=job_id, status=status))
        job = self.jobs.get(job_id)
        if job is not None:
            job.status = status

    def judge_observed(self) -> None:
        """The answers read since the last judgement, held to the ledger and to the job status
        rules, in the order they were read."""
        observed, self.observed = self.observed, []
        for seen in observed:
            if seen.rule == "ledger":
                self.expect(seen.shown == seen.expected, "ledger", seen.message, seen.exchange)
            else:
                self._judge_job_status(seen)

    def _judge_job_status(self, seen: Observed) -> None:
        statuses = self.facts.statuses
        allowed, status = statuses.closed, seen.status
        self.expect(
            isinstance(status, str) and (allowed is None or status in allowed),
            "job-status",
            f"job {seen.job} has status {status!r}, outside the closed set "
            f"{', '.join(sorted(allowed or statuses.terminal))}",
            seen.exchange,
        )
        job = self.jobs.get(seen.job or "")
        if job is None:
            return
        if job.final is not None:
            self.expect(
                status == job.final,
                "terminal-final",
                f"job {seen.job} was {job.final} (terminal) and is now {status!r}",
                seen.exchange,
            )
        elif status in statuses.terminal:
            job.final = status

    def read_job(self, job_id: str) -> None:
        op = self.ctx.held.operations[api.READ_JOB]
        exchange = self.ctx.call(op, path_parameters={op.path_parameters[0].name: job_id})
        record = api.record_in(exchange.json(), job_id)
        if exchange.status != 200 or record is None:
            self.run.note("a job the model started could not be read")
            return
        self.judge_status(job_id, record.get("status"), exchange)

    def advance(self, seconds: int) -> None:
        if seconds and self.run.control is not None:
            self.control("POST", "/clock/advance", {"seconds": seconds})
            self.elapsed += seconds

    def replayable(self) -> list[Sent]:
        """The calls whose key the deployment still holds (the contract's retention, less an
        hour for the waits the rate limit adds)."""
        retention = self.facts.retention
        if retention is None:
            return list(self.sent)
        return [s for s in self.sent if self.elapsed - s.at < float(retention) - 3600]

    def job_operations(self, covered: bool | None = None) -> list[Operation]:
        return [
            op for op in self.facts.paid
            if op.operation_id in self.facts.job_pointers
            and (covered is None or self.facts.coverage.get(op.operation_id) is covered)
        ]  # fmt: skip

    def start_job(self, op: str, n: int) -> Made | None:
        """A job started now by ``op`` (one of this run's job operations), variant ``n``:
        what the call made (None: no job)."""
        ops = self.job_operations()
        if not ops:
            self.run.note("no paid operation that starts a job may be called")
            return None
        chosen = next((o for o in ops if o.operation_id == op), ops[0])
        prepared = requests.paid_request(self.ctx, chosen, n, self.ctx.new_key(), self.options)
        if prepared is None:
            return None
        made = self.accept(chosen, prepared, self.ctx.send(prepared, chosen))
        return made if made is not None and made.job is not None else None

    def end_job(self, job_id: str, status: str) -> bool:
        """The mock's control plane ends a job now, in ``status`` (409 when already ended)."""
        answer = self.control(
            "POST", f"/jobs/{job_id}/outcome", {"status": status, "immediately": True}
        )
        if answer.status_code == 404:
            self.run.note("the mock's control plane cannot decide a job's outcome")
            return False
        return True

    # -- subscription deliveries -----------------------------------------------------------------

    def _judge_delivery(self, subscription: str, job_id: str, event: str) -> None:
        job = self.jobs.get(job_id)
        if job is not None and job.covered is False:
            self.expect(
                False,
                "subscription-coverage",
                f"{event} of job {job_id} (started by {job.operation}) reached subscription "
                f"{subscription}; such jobs are not sent to webhook subscriptions",
                job.started,
            )
        model = self.subscriptions.get(subscription)
        if model is not None:
            self.expect(
                event in model.events,
                "subscription-coverage",
                f"{event} reached subscription {subscription}, which subscribes to "
                f"{', '.join(sorted(model.events))}",
                job.started if job is not None else None,
            )

    def _judge_completeness(self, delivered: set[tuple[str, str, str]]) -> None:
        terminal = self.facts.statuses.terminal
        for job_id, job in sorted(self.jobs.items()):
            if job.covered is False and job.status in terminal:
                self.run.judge("subscription-coverage")  # finished, and nothing reached us
            event = TERMINAL_EVENTS.get(job.status or "")
            if not job.covered or event is None:
                continue
            for subscription, model in sorted(self.subscriptions.items()):
                if model.changed or model.born >= job.born or event not in model.events:
                    continue
                self.expect(
                    (subscription, job_id, event) in delivered,
                    "subscription-coverage",
                    f"job {job_id} (started by {job.operation}) is {job.status}; subscription "
                    f"{subscription} subscribes to {event} and did not receive it",
                    job.started,
                )


def delivered_event(raw: bytes, subscription: str | None) -> tuple[str, str, str] | None:
    """(subscription, job id, event) of a subscription delivery's body."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        return None
    return subscription or "", str(data.get("jobId")), str(body.get("event"))
