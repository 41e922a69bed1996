"""``conformance run --workers N``: the selected checks run in N worker processes.

Worker ``k`` of ``N`` runs ``shard(checks, k, N)``: its deal of the checks that make requests,
and every observer (which judges that worker's own exchanges). Each worker sends its results
back over a pipe as each check ends, so a worker that crashes loses only what it had not
finished; and its progress, which the parent hands to the run's listener: each check's start,
end and wait, and the requests it sent, counted in batches (``requests`` events, at most one
a second: conformance/progress.py). The parent merges the results in the selection's order: a
check that makes requests has the result of the one worker that ran it, an observer the sum of
every worker's counts with their failures, warnings and skips put together (a check that does
both is merged as an observer: its requests were made by one worker, its observations by all).

Against the bundled mock each worker makes a sandbox of its own (``POST /_mock/sandboxes``: its
own keys, clock, records, credits and rate-limit buckets), runs in it and ends it in
``finally``; the parent ends any a dead worker left behind. Against a deployment the workers
share its workspace and key: ``conformance.api`` allows that only for a read-only run.

A worker that dies or raises becomes a failed ``crash`` result for each of its checks that had
not ended; a worker whose target did not answer makes the run raise
:class:`~conformance.target.TargetUnreachable`, as a run in one process does.

How workers start (:func:`worker_context`). On Linux each worker is a fork of multiprocessing's
fork server: a single-threaded process, started once per process, that imported what a worker
needs (:data:`PRELOAD`: Schemathesis, Hypothesis, httpx, the checks, the contract's loaders)
when it started (~0.5 s of CPU, once). A spawned worker, a new interpreter, spent ~0.55 s of CPU
before its first check (~0.85 s with its start and exit); a fork of the server spends ~0.05 s
(~0.1 s). Never a plain fork of the calling process: the pytest plugin runs in its caller's
process, which may have threads. Where there is no fork server (Windows), or fork is unsafe even
from a single-threaded process (macOS, whose system libraries forbid it; CPython spawns there by
default), workers are spawned, as before.

The fork server is multiprocessing's, one for the whole process, shared with any
``forkserver`` process the caller starts; only its context is used, so the process's default
start method is left as it was. It lives until the process ends (~75 MB resident, which its
forks share). Its preload list is read only when it starts: :func:`worker_context` adds
:data:`PRELOAD` to the list set so far (by default ``["__main__"]``, the caller's if it set one)
and never removes anything. So if the caller had already started the fork server, the workers are
forks of a server without the suite and import it themselves, as spawned workers did (slower,
otherwise the same); and ``forkserver`` processes the caller starts after a run with workers are
forks of a server that imported the suite. A fork has the environment the server started with:
each worker first takes the parent's ``os.environ`` of the moment (:func:`begin`), as a spawned
worker would have it; its working directory, ``sys.path`` and ``__main__`` come from the parent
as a spawned worker's do (multiprocessing's preparation data). Modules the server imported read
any environment they read at import then.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any, cast

from conformance.api import Outcome, RunConfig, execute
from conformance.checks import Check, all_checks, check_modules, shard
from conformance.gcpolicy import collect_less_often
from conformance.outcomes import CheckResult, Failure
from conformance.progress import Batch
from conformance.sandboxes import Where, close_sandbox, sandboxed
from conformance.skips import NOTHING_TO_JUDGE
from conformance.target import TargetUnreachable

JOIN_SECONDS = 10.0  # how long a worker that has sent its last word may take to exit

#: What the fork server imports once for every worker it forks: this module (the runner, the
#: generation with Schemathesis and Hypothesis, httpx), the checks, the contract and fixtures'
#: loaders, and what loading the contract into Schemathesis and the first httpx client import
#: (0.1 s a worker). A module left out, or one a new version renames (the server skips a name
#: it cannot import), costs each worker its import, never a wrong result.
PRELOAD = (
    __name__,
    *(f"conformance.checks.{module}" for module in check_modules()),
    "mockserver.contract",
    "mockserver.fixtures",
    "mockserver.resources",
    "schemathesis.specs.openapi.schemas",
    "httpcore",
    "h11",
)


@dataclass(frozen=True)
class Job:
    """One worker's part of the run (pickled to the worker process)."""

    index: int  # from 1
    count: int
    names: tuple[str, ...]  # its checks (its deal, and every observer), in the run's order
    runs: tuple[str, ...]  # those of them it makes the requests of (the others only observe)
    config: RunConfig  # the options (no listener, no report paths)
    where: Where  # the deployment; for the mock, where to make the worker's sandbox
    seed: int

    @property
    def sandboxed(self) -> bool:
        return self.config.is_mock

    @property
    def label(self) -> str:
        return f"worker {self.index}/{self.count}"


@dataclass
class Worker:
    """A worker process as the parent sees it, and what it has sent so far."""

    job: Job
    process: BaseProcess
    conn: Connection
    part: list[Check] = field(default_factory=list)  # shard(checks, index, count)
    ended: dict[str, CheckResult] = field(default_factory=dict)  # checks that make requests
    done: Outcome | None = None  # observers' results, requests and notes, at the end
    sandbox: str | None = None
    unreachable: str | None = None
    problem: str | None = None


def deal(checks: list[Check], count: int) -> list[list[Check]]:
    """The ``count`` workers' parts of ``checks`` (each with every observer)."""
    return [shard(checks, k, count) for k in range(1, count + 1)]


def budget_share(max_requests: int | None, index: int, count: int) -> int | None:
    """Worker ``index``'s share of ``--max-requests`` (the shares add up to it)."""
    if max_requests is None:
        return None
    share, extra = divmod(max_requests, count)
    return max(1, share + (1 if index <= extra else 0))


def run_workers(
    config: RunConfig,
    where: Where,
    checks: list[Check],
    seed: int,
    count: int,
    entry: Callable[[Job, Connection], None] | None = None,
) -> Outcome:
    """Run ``checks`` in ``count`` worker processes (each running ``entry``, :func:`work`
    unless a test gives another); their merged outcome."""
    emit = config.on_event or (lambda *_: None)
    options = replace(
        config,
        workers=1,
        shard=None,
        on_event=None,
        junit_xml=None,
        report_json=None,
        report_html=None,
    )
    parts = deal(checks, count)
    jobs = [
        Job(
            index=k,
            count=count,
            names=tuple(c.name for c in part),
            runs=tuple(c.name for c in part if c.run is not None),
            config=replace(options, max_requests=budget_share(config.max_requests, k, count)),
            where=where,
            seed=seed,
        )
        for k, part in enumerate(parts, start=1)
    ]
    context = worker_context()
    workers: list[Worker] = []
    try:
        for job, part in zip(jobs, parts, strict=True):
            workers.append(start(context, job, part, entry or work))
        collect(workers, {c.name: c for c in checks}, emit)
    finally:
        for worker in workers:
            stop(worker)
    if unreachable := [w.unreachable for w in workers if w.unreachable]:
        raise TargetUnreachable(unreachable[0])
    return merge(checks, workers, seed)


def worker_context(platform: str = sys.platform) -> Any:
    """The multiprocessing context workers start in: the fork server's on Linux (with
    :data:`PRELOAD` added to its preload list, which counts only if it has not started yet),
    ``spawn`` elsewhere. Only this context is used: the process's default start method, and
    whatever context its caller uses, are left as they are."""
    if not platform.startswith("linux") or "forkserver" not in (
        multiprocessing.get_all_start_methods()
    ):
        # No fork server here (Windows), or fork is not safe even from a single-threaded
        # server (macOS: its system libraries; CPython spawns there by default).
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    preload = list(_preload_set())
    context.set_forkserver_preload(preload + [m for m in PRELOAD if m not in preload])
    return context


def _preload_set() -> list[str]:
    """The fork server's preload list as set so far (by default ``["__main__"]``): ours is added
    to it, so a caller's own preloads are kept. multiprocessing has no public getter."""
    from multiprocessing import forkserver

    current = getattr(getattr(forkserver, "_forkserver", None), "_preload_modules", None)
    if isinstance(current, list | tuple) and all(isinstance(m, str) for m in current):
        return list(current)
    return ["__main__"]


def start(
    context: Any, job: Job, part: list[Check], entry: Callable[[Job, Connection], None]
) -> Worker:
    receiving, sending = context.Pipe(duplex=False)
    process = context.Process(
        target=begin,
        args=(entry, job, sending, dict(os.environ)),
        name=f"conformance-{job.index}",
        daemon=True,
    )
    process.start()
    sending.close()  # the worker holds the only sending end: its exit is our EOF
    return Worker(job, process, receiving, part)


def collect(
    workers: list[Worker], by_name: dict[str, Check], emit: Callable[[str, Any], None]
) -> None:
    """Read what the workers send until every one has closed its pipe."""
    live = {worker.conn: worker for worker in workers}
    while live:
        for ready in wait(list(live)):
            conn = cast(Connection, ready)
            worker = live[conn]
            try:
                kind, payload = conn.recv()
            except (EOFError, OSError):
                del live[conn]
                continue
            except Exception as exc:  # a message that cannot be read: the rest still can
                worker.problem = f"a result could not be read: {exc!r}"
                continue
            receive(worker, kind, payload, by_name, emit)


def receive(
    worker: Worker,
    kind: str,
    payload: Any,
    by_name: dict[str, Check],
    emit: Callable[[str, Any], None],
) -> None:
    if kind == "check-start":
        emit("check-start", by_name[payload])
    elif kind == "check-end":
        worker.ended[payload.name] = payload
        emit("check-end", payload)
    elif kind == "wait":
        emit("wait", payload)
    elif kind == "requests":
        for sent in payload:
            emit("requests", sent)
    elif kind == "sandbox":
        worker.sandbox = payload
    elif kind == "done":
        worker.done = payload
    elif kind == "unreachable":
        worker.unreachable = payload
    elif kind == "error":
        worker.problem = payload


def stop(worker: Worker) -> None:
    """Wait for the worker to exit (end it if it will not); end a sandbox it left behind."""
    worker.process.join(JOIN_SECONDS if worker.done or worker.problem else 1.0)
    if worker.process.is_alive():
        worker.process.terminate()
        worker.process.join(JOIN_SECONDS)
    if worker.process.is_alive():
        worker.process.kill()
        worker.process.join()
    worker.conn.close()
    if worker.done is None and worker.problem is None:
        worker.problem = f"the process ended without a result (exit code {worker.process.exitcode})"
    if worker.sandbox is not None and worker.done is None:
        close_sandbox(replace(worker.job.where, sandbox=worker.sandbox))


# -- merging ------------------------------------------------------------------------------------


def merge(checks: list[Check], workers: list[Worker], seed: int) -> Outcome:
    """One outcome, in the selection's order, from every worker's part."""
    owner = {c.name: w for w in workers for c in w.part if c.run is not None}
    results = []
    for check in checks:
        worker = owner.get(check.name)  # the one that made its requests, if it makes any
        if check.observe is not None:
            result = merge_observer(check, [w.done.results for w in workers if w.done])
            if worker is not None and worker.done is None:
                result.failures.append(crash_failure(check, worker, seed))
        else:
            assert worker is not None
            result = worker.ended.get(check.name) or crashed(check, worker, seed)
        if not result.judgements and not result.skipped:
            result.skipped[NOTHING_TO_JUDGE] += 1  # never a vacuous pass
        results.append(result)
    requests = sum(
        w.done.requests if w.done else sum(r.requests for r in w.ended.values()) for w in workers
    )
    notes = [note for w in workers if w.done for note in w.done.notes]
    stuck = next((w.done.setup_problem for w in workers if w.done and w.done.setup_problem), None)
    return Outcome(results, requests, list(dict.fromkeys(notes)), setup_problem=stuck)


def merge_observer(check: Check, parts: list[list[CheckResult]]) -> CheckResult:
    """An observer's result: every worker's counts summed, findings put together."""
    merged = CheckResult(check.name, check.family, check.description)
    for results in parts:
        for part in results:
            if part.name != check.name:
                continue
            merged.ran = merged.ran or part.ran
            merged.requests += part.requests
            merged.passed += part.passed
            merged.skipped.update(part.skipped)
            merged.failures.extend(part.failures)
            merged.warnings.extend(part.warnings)
    del merged.skipped[NOTHING_TO_JUDGE]  # said again below if nobody judged anything
    return merged


def crashed(check: Check, worker: Worker, seed: int) -> CheckResult:
    result = CheckResult(check.name, check.family, check.description, ran=True)
    result.failures.append(crash_failure(check, worker, seed))
    return result


def crash_failure(check: Check, worker: Worker, seed: int) -> Failure:
    why = worker.problem or "it sent no result for this check"
    return Failure(
        check=check.name,
        rule="crash",
        message=f"{worker.job.label} crashed before this check ended: {why}",
        seed=seed,
    )


# -- in the worker process ----------------------------------------------------------------------


def begin(
    entry: Callable[[Job, Connection], None],
    job: Job,
    conn: Connection,
    environ: dict[str, str],
) -> None:
    """A worker's first step: the parent's environment as it was when the worker was started (a
    fork of the fork server has the server's, from when it started), then ``entry``."""
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)
    entry(job, conn)


def work(job: Job, conn: Connection) -> None:
    """A worker's life: its sandbox (mock), its checks, its results sent as they end."""
    collect_less_often()  # a process of the suite's own (conformance/gcpolicy.py)

    def send(kind: str, payload: Any) -> None:
        try:
            conn.send((kind, payload))
        except (pickle.PicklingError, TypeError, AttributeError):  # a finding's extra
            conn.send((kind, portable(payload)))

    batch = Batch()  # requests are reported in batches, never one message per exchange

    def forward(event: str, payload: Any) -> None:
        sent = batch.add(payload) if event == "exchange" else batch.take()
        if sent:
            send("requests", sent)
        if event == "check-start":
            send("check-start", payload.name)
        elif event in ("check-end", "wait"):
            send(event, payload)

    try:
        checks = checks_of(job)
        with world(job, send) as where:
            outcome = execute(job.config, where, checks, job.seed, forward)
        observers = [r for r, c in zip(outcome.results, checks, strict=True) if c.observe]
        send("done", replace(outcome, results=observers))
    except TargetUnreachable as exc:
        send("unreachable", str(exc))
    except BaseException:
        send("error", traceback.format_exc(limit=20))
    finally:
        conn.close()


@contextmanager
def world(job: Job, send: Callable[[str, Any], None]) -> Iterator[Where]:
    """The deployment; against the mock, a sandbox of the worker's own, ended however the block
    ends (its id sent first, so that the parent can end it should this process die)."""
    if not job.sandboxed:
        yield job.where
        return
    with sandboxed(job.where.base_url, job.seed, job.where.control_token) as where:
        send("sandbox", where.sandbox)
        yield where


def portable(payload: Any) -> Any:
    """``payload`` with every finding's ``extra`` values as text (one would not pickle)."""
    if isinstance(payload, Outcome):
        return replace(payload, results=[portable(r) for r in payload.results])
    if isinstance(payload, CheckResult):
        failures = [
            replace(f, extra={k: repr(v) for k, v in f.extra.items()}) for f in payload.failures
        ]
        return replace(payload, failures=failures)
    return payload


def checks_of(job: Job) -> list[Check]:
    """The job's checks, from this process's registry; those it only observes without ``run``."""
    known = {c.name: c for c in all_checks()}
    missing = [n for n in job.names if n not in known]
    if missing:
        raise LookupError(f"no check named {', '.join(missing)} in the worker process")
    return [known[n] if n in job.runs else replace(known[n], run=None) for n in job.names]
