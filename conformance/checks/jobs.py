"""Jobs: whole lifecycles, read the way a client recovers them (``GET /v1/jobs/{jobId}``).

Jobs are started by the paid operations whose success answers a ``job`` (generated requests,
one job per operation), then polled while time passes: against the bundled mock its manual clock
is moved through the control plane, at the recommended polling interval the contract states and
then in longer steps, until every job is terminal (or the mock has run two hours); against a
real deployment the jobs are started in the prepare phase, so that they run while the other
checks do, and read at that interval for at most ``--job-wait`` seconds (conformance/polling.py).
A footage edit that waits for a person to approve its cuts is not waited for. The set of
statuses and its terminal values are read from the contract (``JobStatus``); where the profile
leaves the in-flight values open, only terminal values are held to their rules.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.checks import check, prepares, steps
from conformance.checks.idempotency import first_success
from conformance.context import Context
from conformance.contract import ContractView, Operation
from conformance.polling import beyond, of_limit, polling_interval
from conformance.refusals import refusal, refused_since
from conformance.skips import Skip
from conformance.target import Exchange

FAMILY = "jobs"
READ_JOB = "getJob"
RENDER = "renderVideo"  # its done jobs carry `download` and the deprecated copy `video`
RENDER_KIND = "render"  # the contract's JobKind of a render job (where `kind` is returned)
MOCK_HORIZON = 7200.0  # mock seconds a lifecycle is followed for
TERMINAL_REREADS = 2  # reads of a terminal job after the one that saw it terminal
NOT_TERMINAL = "a job was still in flight when polling ended"
# "job.awaiting_approval: a footage edit waits for a person to approve its cuts"
AWAITING_PERSON = "awaiting_approval"
HELD = "a footage edit waits for a person to approve its cuts: not followed to its end"
_REPLACEMENT = re.compile(r"use `([^`]+)`")


def replacement(view: ContractView, schema: Any) -> str | None:
    """The field a deprecated property names as its replacement (``use `download```)."""
    text = ""
    for node in (schema, view.resolve(schema)):
        if isinstance(node, dict):
            text += " " + str(node.get("description", ""))
    found = _REPLACEMENT.search(text)
    return found.group(1) if found else None


def deprecated_in(view: ContractView, schema: Any) -> dict[str, str]:
    """``{deprecated property: its replacement}`` of an object schema."""
    found = {}
    for name, raw in view.flatten(schema)["properties"].items():
        marked = isinstance(raw, dict) and raw.get("deprecated")
        resolved = view.resolve(raw)
        deprecated = marked or (isinstance(resolved, dict) and resolved.get("deprecated"))
        if deprecated and (other := replacement(view, raw)) is not None:
            found[name] = other
    return found


@dataclass(frozen=True)
class Statuses:
    terminal: frozenset[str]
    known: frozenset[str] | None  # None: the profile leaves in-flight values open


def statuses(view: ContractView) -> Statuses:
    schemas = view.document.get("components", {}).get("schemas", {})
    terminal = frozenset(view.resolve(schemas.get("JobTerminalStatus", {})).get("enum", []))
    status = view.resolve(schemas.get("JobStatus", {}))
    known: set[str] = set(status.get("enum", []))
    for branch in status.get("anyOf", []) + status.get("oneOf", []):
        values = view.resolve(branch).get("enum")
        if values is None:
            return Statuses(terminal, None)
        known.update(values)
    return Statuses(terminal, frozenset(known) if known else None)


def done_status(view: ContractView) -> str:
    """The status whose job carries artifacts (the contract's ``if status const``)."""
    job = view.resolve(view.document.get("components", {}).get("schemas", {}).get("Job", {}))
    for part in job.get("allOf", []):
        const = view.resolve(part).get("if", {}).get("properties", {}).get("status", {})
        if "const" in const:
            return str(const["const"])
    return "done"


@dataclass
class Tracked:
    """One job being followed."""

    job_id: str
    started_by: Operation
    statuses: list[str] = field(default_factory=list)
    terminal: str | None = None
    reads_after_terminal: int = 0
    last: dict[str, Any] | None = None
    gone: bool = False
    held: bool = False  # it waits for a person (a footage edit's cuts to approve)

    @property
    def render(self) -> bool:
        kind = (self.last or {}).get("kind")
        return self.started_by.operation_id == RENDER or kind == RENDER_KIND

    @property
    def wanted(self) -> bool:
        return (
            not self.gone
            and not self.held
            and (self.terminal is None or self.reads_after_terminal < TERMINAL_REREADS)
        )


def job_starters(ctx: Context, only: Iterable[str] | None = None) -> list[Operation]:
    """Paid operations that may be called and whose success answers a ``job``."""
    full = ctx.contract.full
    found = []
    for op in ctx.held.operations.values():
        if only is not None and op.operation_id not in only:
            continue
        if not op.paid or op.method != "POST" or ctx.why_not_send(op) is not None:
            continue
        schema = full.success_schema(full.operations[op.operation_id])
        if schema is not None and "job" in full.flatten(schema)["properties"]:
            found.append(op)
    return found


def start_jobs(ctx: Context, ops: list[Operation]) -> list[Tracked]:
    """One job per operation (its first generated request that succeeds)."""
    started = []
    for op in ops:
        found = first_success(ctx, [op])
        if found is None:
            continue
        _, _, exchange = found
        body = exchange.json()
        job = body.get("job") if isinstance(body, dict) else None
        if isinstance(job, dict) and isinstance(job.get("id"), str):
            started.append(Tracked(job["id"], op))
    return started


def _read_path(ctx: Context) -> tuple[Operation, str]:
    op = ctx.contract.full.operations[READ_JOB]
    return op, op.path_parameters[0].name


def read_job(ctx: Context, job_id: str) -> tuple[Exchange, dict[str, Any] | None]:
    op, name = _read_path(ctx)
    exchange = ctx.call(op, path_parameters={name: job_id})
    body = exchange.json()
    job = body.get("job") if isinstance(body, dict) else None
    ok = exchange.status == 200 and isinstance(job, dict)
    return exchange, job if ok else None


OnRead = Callable[[Tracked, Exchange, dict[str, Any]], None]


def follow(
    ctx: Context,
    jobs: list[Tracked],
    on_read: OnRead | None = None,
    horizon: float | None = None,
) -> float:
    """Read every wanted job, let time pass, again, until none is wanted or the horizon is
    reached (against a deployment: ``--job-wait``); ``on_read(tracked, exchange, job)`` judges
    each read. Answers the seconds waited."""
    interval = polling_interval(ctx.contract)
    terminal = statuses(ctx.held).terminal
    mock = ctx.control is not None
    if horizon is None:
        horizon = MOCK_HORIZON if mock else ctx.session.job_wait
    waited = 0.0
    while True:
        for tracked in [t for t in jobs if t.wanted]:
            exchange, job = read_job(ctx, tracked.job_id)
            if job is None and exchange.status in (429, 503):
                ctx.skip("a job read was refused for now (429 or 503)")
                if tracked.terminal is not None:  # a read again all the same
                    tracked.reads_after_terminal += 1
                continue
            if job is None:
                tracked.gone = True
                ctx.fail(
                    "readable",
                    f"job {tracked.job_id}, started by {tracked.started_by.label}, read as "
                    f"{exchange.answered}",
                    exchange=exchange,
                    quote=ctx.held.quote(_pointer(_read_path(ctx)[0])),
                )
                continue
            tracked.last = job
            if tracked.terminal is not None:
                tracked.reads_after_terminal += 1
            if on_read is not None:
                on_read(tracked, exchange, job)
            status = job.get("status")
            tracked.statuses.append(str(status))
            if tracked.terminal is None and status in terminal:
                tracked.terminal = str(status)
            tracked.held = status == AWAITING_PERSON
        if not any(t.wanted for t in jobs) or waited >= horizon:
            return waited
        # The recommended interval; on the mock's free clock, longer steps as the run goes on.
        step = max(interval, waited / 2) if mock else min(interval, horizon - waited)
        unfinished = sum(1 for t in jobs if t.wanted and t.terminal is None)
        if not unfinished and not mock:
            continue  # only the reads again of ended jobs are left: no need to wait for them
        why = f"{unfinished} job(s) to end, read every {interval:g} s"
        ctx.target.wait(step, of_limit(why, waited + step, horizon, interval))
        waited += step


MOCK_HOURS = 8  # hours of the mock's clock until_terminal moves at most


def until_terminal(ctx: Context, job_ids: list[str]) -> dict[str, str | None]:
    """Read the jobs until every one is terminal; their last statuses (None: unreadable).
    The mock's clock is moved an hour at a time (its due deliveries made); a deployment is
    read at the recommended interval for at most ``--job-wait`` seconds."""
    terminal = statuses(ctx.held).terminal

    def read() -> dict[str, str | None]:
        return {j: (read_job(ctx, j)[1] or {}).get("status") for j in job_ids}

    def ended(found: dict[str, str | None]) -> bool:
        return all(s in terminal for s in found.values())

    why = f"job {', '.join(job_ids)} to end"
    found, _ = steps.polled(ctx, read, ended, why, step=3600, polls=MOCK_HOURS - 1, deliver=True)
    return found


def _pointer(op: Operation) -> str:
    return f"#/paths/{op.path.replace('/', '~1')}/{op.method.lower()}"


def judge_render_artifacts(ctx: Context, tracked: Tracked, exchange: Exchange) -> None:
    """A done render job's artifacts carry `download` and the deprecated copy equal to it."""
    full = ctx.contract.full
    copies = deprecated_in(full, full.document["components"]["schemas"]["JobArtifacts"])
    artifacts = (tracked.last or {}).get("artifacts")
    quote = ctx.held.quote("#/components/schemas/JobArtifacts")
    for old, new in copies.items():
        ok = isinstance(artifacts, dict) and isinstance(artifacts.get(new), str)
        ok = ok and artifacts.get(old) == artifacts.get(new)  # type: ignore[union-attr]
        ctx.expect(
            ok,
            "render-artifacts",
            f"done render job {tracked.job_id} has artifacts {artifacts!r}: expected `{new}` "
            f"and its deprecated copy `{old}` equal to it",
            exchange=exchange,
            quote=quote,
            key=("render-artifacts", old),
        )


@check(
    "jobs-status-closed-set",
    FAMILY,
    "jobs followed to the end: every status in the contract's closed set, a terminal status "
    "never changes on later reads, a done render job's artifacts carry download and its "
    "deprecated copy video",
    spends=True,
)
def status_closed_set(ctx: Context) -> None:
    jobs: list[Tracked] = ctx.prepared
    known = statuses(ctx.held)
    quote = ctx.held.quote("#/components/schemas/JobStatus")
    read_quote = ctx.held.quote(_pointer(_read_path(ctx)[0]))
    open_seen: set[Any] = set()

    def judge(tracked: Tracked, exchange: Exchange, job: dict[str, Any]) -> None:
        status = job.get("status")
        if known.known is not None:
            ctx.expect(
                status in known.known,
                "closed-set",
                f"job {tracked.job_id} reads status {status!r}, outside the closed set "
                f"{', '.join(sorted(known.known))}",
                exchange=exchange,
                quote=quote,
                key=("closed-set", str(status)),
            )
        elif status not in known.terminal and status not in open_seen:
            open_seen.add(status)  # once per status
            ctx.skip("in-flight statuses are not enumerated for this profile")
        if tracked.terminal is not None:
            ctx.expect(
                status == tracked.terminal,
                "terminal-is-final",
                f"job {tracked.job_id} read {tracked.terminal!r} (terminal) and later {status!r}",
                exchange=exchange,
                quote=read_quote,
                key=("terminal", tracked.started_by.operation_id),
            )
        elif status == done_status(ctx.contract.full) and tracked.render:
            tracked.last = job
            judge_render_artifacts(ctx, tracked, exchange)

    follow(ctx, jobs, judge)
    for tracked in jobs:
        if tracked.held:
            ctx.skip(HELD)
        elif tracked.terminal is None and not tracked.gone:
            ctx.skip(NOT_TERMINAL)
    if not any(t.terminal for t in jobs):
        what = "no job reached a terminal state"
        if ctx.control is not None:
            raise Skip(f"{what} within {MOCK_HORIZON:g} s of the mock's clock")
        raise Skip(beyond(ctx, what))


@prepares("jobs-status-closed-set")
def start_every_kind(ctx: Context) -> list[Tracked]:
    """One job of every operation that starts one (they run while other checks do)."""
    ops = job_starters(ctx)
    if not ops:
        raise Skip("no operation that starts a job may be called")
    mark = ctx.target.count
    jobs = start_jobs(ctx, ops)
    if not jobs:
        raise Skip(refusal("no job could be started", refused_since(ctx, mark, ops)))
    return jobs
