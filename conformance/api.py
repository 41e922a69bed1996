"""Running the suite from code: :func:`run` with a :class:`RunConfig` answers a :class:`Report`.

Example::

    from conformance.api import RunConfig, run

    report = run(RunConfig(base_url="https://api.example.com", api_key=key, max_requests=500,
                           seed=1, only=["envelope", "auth"]))
    print(report.exit_code, report.failed_checks())

``run`` raises :class:`UsageError` for a configuration that cannot run, and
:class:`TargetUnreachable` when the bundled mock would not start or the deployment stops
answering mid-run (the command line turns both into exit status 2). Before any check it runs the
preflight (conformance/preflight.py): a setup it cannot judge (a deployment that does not
answer, a key of the wrong kind, a rate window that never moves ...) is a report whose
``setup_problem`` says what to change (verdict "setup problem", exit status 2), with no check
judged; so is a rate window found stuck during the run. Every finding of a run is in the
report.
The command line (``conformance run``) and the pytest plugin both call this function.

With ``workers=N`` (conformance/workers.py) the checks run in other processes (forks of
multiprocessing's fork server on Linux, spawned elsewhere), which import the caller's main
module, so a script that asks for workers must guard its entry point
(``if __name__ == "__main__":``), as :mod:`multiprocessing` requires. Against the bundled mock
(``mock``, ``mock_url``) each worker, and each ``mock_url`` run, works in a sandbox of its own
(conformance/sandboxes.py).
"""

from __future__ import annotations

import random
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from conformance.checks import Check, SelectionError, all_checks, select, shard
from conformance.context import Session
from conformance.contract import Contract
from conformance.mockprocess import START_SECONDS, MockProcess, MockStartError, fixture_keys
from conformance.outcomes import CheckResult
from conformance.plan import Plan, plan_run, read_rate
from conformance.polling import default_job_wait
from conformance.preflight import Preflight, preflight
from conformance.profiles import PROFILES
from conformance.receiver import parse_listen
from conformance.results import Report
from conformance.runner import Listener, run_checks
from conformance.sandboxes import Where, mock_where, sandboxed
from conformance.target import BudgetExhausted, SetupProblem, Target, TargetUnreachable, Wait

__all__ = ["RunConfig", "TargetUnreachable", "UsageError", "check_setup", "run"]

#: The checks that drive the key into 429 on purpose (``Check.window``; against a deployment,
#: about one rate-limit window each): never beside other workers on one key.
RATE_LIMIT_PROBES = ("rate-limit", "rate-limit-shared-bucket")
#: The probe of two keys of one person: against a deployment, only with --same-person-key.
SAME_PERSON_PROBES = ("rate-limit-shared-bucket",)


class UsageError(ValueError):
    """The configuration cannot run (exit status 2)."""


@dataclass
class RunConfig:
    """Everything a run needs; mirrors ``conformance run``'s options."""

    base_url: str | None = None
    api_key: str | None = None
    second_key: str | None = None
    restricted_key: str | None = None  # a lower role's key in the workspace of api_key
    same_person_key: str | None = None  # another key of the person who holds api_key
    mock: bool = False
    mock_url: str | None = None  # the bundled mock, already running (default fixtures)
    mock_control_token: str | None = field(default=None, repr=False)  # its control token, if any
    profile: str | None = None  # default: contract for base_url, full for mock
    allow_spend: bool = False
    allow_faults: bool = False  # inject faults through a fault hook the deployment offers
    max_requests: int | None = None
    time_budget: float | None = None  # seconds the whole run may take (--time-budget)
    seed: int | None = None
    only: list[str] = field(default_factory=list)
    skip: list[str] = field(default_factory=list)
    shard: tuple[int, int] | None = None  # (index from 1, count): this job's part of the run
    # CI gates (conformance/coverage.py): unmet, the verdict is insufficient coverage (exit 4)
    min_rule_coverage: float | None = None  # percent of the judgeable rules to judge
    require: list[str] = field(default_factory=list)  # checks or families that must judge
    workers: int = 1  # worker processes, each running its deal of the checks (workers.py)
    sandbox: bool = True  # against --mock-url: run in a sandbox of its own (False: base world)
    receiver_listen: str = "127.0.0.1:0"
    receiver_url: str | None = None
    webhook_wait: float = 60.0  # seconds to wait for deliveries from a real deployment
    job_wait: float | None = None  # seconds a check polls a deployment's job (None: the default)
    long_video_url: str | None = None  # a video longer than remix url sources may be
    junit_xml: Path | str | None = None
    report_json: Path | str | None = None
    report_html: Path | str | None = None
    timeout: float = 30.0
    wait_cap: float = 120.0  # the longest single wait for a real deployment's Retry-After
    document: dict[str, Any] | None = None  # the contract (default: the bundled spec)
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic  # what the time budget is counted on
    on_event: Listener | None = None  # told of the run's events (conformance/progress.py)

    @property
    def is_mock(self) -> bool:
        return self.mock or bool(self.mock_url)

    @property
    def effective_profile(self) -> str:
        return self.profile or ("full" if self.is_mock else "contract")


def validate(config: RunConfig) -> list[Check]:
    """The checks the configuration selects; :class:`UsageError` when it cannot run."""
    if sum(map(bool, (config.mock, config.mock_url, config.base_url))) > 1:
        raise UsageError("give one of --mock, --mock-url and --base-url")
    if config.mock_url and urlsplit(config.mock_url).scheme not in ("http", "https"):
        raise UsageError(f"--mock-url must be an http(s) URL, not {config.mock_url!r}")
    if not config.is_mock:
        if not config.base_url:
            raise UsageError("--base-url (or --mock) is required")
        parts = urlsplit(config.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"--base-url must be an http(s) URL, not {config.base_url!r}")
        if not config.api_key:
            raise UsageError("--api-key is required with --base-url")
        if config.restricted_key and config.restricted_key == config.api_key:
            raise UsageError("--restricted-key must be another key than --api-key")
        if config.second_key and config.second_key == config.api_key:
            raise UsageError("--second-key must be a key of another workspace than --api-key")
        if config.same_person_key and config.same_person_key == config.api_key:
            raise UsageError(
                "--same-person-key must be another key than --api-key (of the same person)"
            )
        if config.receiver_url and not _acceptable_receiver(config.receiver_url):
            raise UsageError("--receiver-url must be an https URL a deployment can reach")
    if config.effective_profile not in PROFILES:
        raise UsageError(f"--profile must be one of {', '.join(PROFILES)}")
    if config.job_wait is not None and config.job_wait < 0:
        raise UsageError("--job-wait must be at least 0 seconds")
    if config.max_requests is not None and config.max_requests < 1:
        raise UsageError("--max-requests must be at least 1")
    if config.time_budget is not None and config.time_budget <= 0:
        raise UsageError("--time-budget must be more than 0 seconds")
    _validate_sandbox(config)
    try:
        parse_listen(config.receiver_listen)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        checks = select(config.only, config.skip)
    except SelectionError as exc:
        raise UsageError(str(exc)) from None
    _validate_gates(config, checks)
    checks = _without_unnamed_probes(config, checks)
    if config.shard is not None:
        index, count = config.shard
        if not 1 <= index <= count:
            raise UsageError(f"--shard {index}/{count}: give I/N with 1 <= I <= N")
        checks = shard(checks, index, count)
    if config.workers < 1:
        raise UsageError("--workers must be at least 1")
    if worker_count(config, checks) > 1:
        _validate_workers(config, checks)
    return checks


def _validate_gates(config: RunConfig, checks: list[Check]) -> None:
    """``--min-rule-coverage`` is a percentage; ``--require`` names checks or families (as
    ``--only`` does; a name of both, such as ``rate-limit``, is the check), each kept by the
    selection."""
    minimum = config.min_rule_coverage
    if minimum is not None and not 0 <= minimum <= 100:
        raise UsageError(f"--min-rule-coverage must be a percentage from 0 to 100, not {minimum:g}")
    try:
        select(config.require)
    except SelectionError as exc:
        raise UsageError(f"--require: {exc}") from None
    every = {c.name for c in all_checks()}
    chosen = {c.name for c in checks}
    families = {c.family for c in checks}
    if left_out := [
        name for name in config.require if name not in (chosen if name in every else families)
    ]:
        raise UsageError(
            f"--require {', '.join(left_out)}: the selection leaves it out (a check that runs "
            "only when named needs --only too): the gate could never be met"
        )


def _without_unnamed_probes(config: RunConfig, checks: list[Check]) -> list[Check]:
    """``--workers N`` against a deployment is for a read-only run on one key: the rate-limit
    probes, which drive that key into 429, are left out unless ``--only`` names them (then
    the workers are refused, see :func:`_validate_workers`)."""
    if config.is_mock or config.workers < 2:
        return checks
    named = {n for n in config.only if n in RATE_LIMIT_PROBES}
    return [c for c in checks if c.name not in RATE_LIMIT_PROBES or c.name in named]


def _validate_sandbox(config: RunConfig) -> None:
    if config.sandbox:
        own = (config.api_key, config.second_key, config.restricted_key, config.same_person_key)
        if config.mock_url and any(own):
            raise UsageError(
                "--mock-url runs in a sandbox of its own, with the sandbox's keys: give "
                "--no-sandbox to use your own --api-key, --second-key, --restricted-key or "
                "--same-person-key"
            )
        return
    if not config.is_mock:
        raise UsageError("--no-sandbox applies only to the bundled mock (--mock, --mock-url)")
    if config.workers > 1:
        raise UsageError("--workers N > 1 needs a sandbox for each worker: leave out --no-sandbox")


def worker_count(config: RunConfig, checks: list[Check]) -> int:
    """The worker processes a run starts: ``--workers``, but never more than the checks that
    make requests (1: the run stays in this process)."""
    active = sum(1 for c in checks if c.run is not None)
    return max(1, min(config.workers, active))


def _validate_workers(config: RunConfig, checks: list[Check]) -> None:
    """Parallel workers: each in a sandbox of its own against the mock; against a deployment,
    only when the run is read-only (see ``conformance run --help``)."""
    _, port = parse_listen(config.receiver_listen)
    if config.receiver_url or port:
        raise UsageError(
            f"--workers {config.workers}: each worker runs its own webhook receiver on a free "
            "port; leave out --receiver-url and give --receiver-listen HOST:0"
        )
    if config.time_budget is not None:
        raise UsageError(
            f"--workers {config.workers} with --time-budget: the plan is made for one process "
            "at the deployment's rate limit; use --workers 1"
        )
    if config.is_mock:
        return
    why, drop = [], []
    if config.allow_spend:
        writers = [c.name for c in checks if c.run is not None and (c.creates or c.spends)]
        more = f" and {len(writers) - 3} more" if len(writers) > 3 else ""
        named = f" ({', '.join(writers[:3])}{more} among them)" if writers else ""
        why.append(f"with --allow-spend the checks create and spend{named}")
        drop.append("--allow-spend")
    if config.allow_faults:
        why.append("with --allow-faults the checks inject faults")
        drop.append("--allow-faults")
    if probes := [c.name for c in checks if c.name in RATE_LIMIT_PROBES]:
        why.append(f"{', '.join(probes)} drives the key into 429")
        drop.append(" ".join(probes))
    if why:
        raise UsageError(
            f"--workers {config.workers} against --base-url is for a read-only run only, and "
            f"{'; '.join(why)}: parallel workers would disturb each other in one workspace, on "
            f"one key. Use --workers 1, leave out {' and '.join(drop)}, or run against the "
            "bundled mock (--mock, --mock-url), where each worker gets a sandbox of its own"
        )


def _acceptable_receiver(url: str) -> bool:
    """HTTPS, as deployments require; plain http only on loopback (a local test deployment)."""
    parts = urlsplit(url)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    return parts.scheme == "https" or (parts.scheme == "http" and loopback)


def rerun_options(config: RunConfig) -> list[str]:
    """The options that aim a new run where ``config`` aimed, with the same permissions (keys
    written as environment variables, never their values)."""
    if config.mock:
        options = ["--mock"]
    elif config.mock_url:
        options = ["--mock-url", shlex.quote(config.mock_url)]
        options += [] if config.sandbox else ["--no-sandbox"]
    else:
        options = ["--base-url", shlex.quote(config.base_url or ""), "--api-key", '"$API_KEY"']
        if config.second_key:
            options += ["--second-key", '"$SECOND_API_KEY"']
        if config.restricted_key:
            options += ["--restricted-key", '"$RESTRICTED_API_KEY"']
        if config.same_person_key:
            options += ["--same-person-key", '"$SAME_PERSON_API_KEY"']
    flags = {"--allow-spend": config.allow_spend, "--allow-faults": config.allow_faults}
    options += [flag for flag, on in flags.items() if on]
    if config.long_video_url:
        options += ["--long-video-url", shlex.quote(config.long_video_url)]
    if config.receiver_url:
        options += ["--receiver-url", shlex.quote(config.receiver_url)]
    return options


def run(config: RunConfig) -> Report:
    """Run the suite as configured; the report of what it found."""
    checks = validate(config)
    seed = config.seed if config.seed is not None else random.randrange(2**31)
    started = time.monotonic()
    # The time budget counts from the run's start, a bundled mock's start-up included.
    deadline = None if config.time_budget is None else config.clock() + config.time_budget
    with _deployment(config, seed) as where:
        report = Report(
            base_url=where.base_url,
            profile=config.effective_profile,
            seed=seed,
            allow_spend=config.allow_spend,
            mock=config.is_mock,
            max_requests=config.max_requests,
            started=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            options=rerun_options(config),
            min_rule_coverage=config.min_rule_coverage,
            require=list(config.require),
        )
        found = preflight(config, where, checks)
        if config.on_event is not None:
            config.on_event("preflight", found)
        if found.ok:
            outcome = _run_at(_after(config, found), where, checks, seed, deadline)
        else:
            outcome = Outcome([], setup_problem=found.problem)
    report.setup_problem = outcome.setup_problem
    report.checks = [] if report.setup_problem else outcome.results  # none judged as set up
    report.requests = found.requests + outcome.requests
    report.notes = [f"preflight: {line}" for line in found.findings] + outcome.notes
    report.duration_seconds = time.monotonic() - started
    write_reports(report, config)
    return report


def check_setup(config: RunConfig) -> Preflight:
    """The preflight alone (``conformance preflight``): what a run with ``config`` would find
    before its first check. :class:`UsageError` as :func:`run`."""
    checks = validate(config)
    seed = config.seed if config.seed is not None else random.randrange(2**31)
    with _deployment(config, seed) as where:
        return preflight(config, where, checks)


def _after(config: RunConfig, found: Preflight) -> RunConfig:
    """The run's configuration after the preflight: its requests came out of --max-requests."""
    if config.max_requests is None:
        return config
    return replace(config, max_requests=max(1, config.max_requests - found.requests))


@contextmanager
def _deployment(config: RunConfig, seed: int) -> Iterator[Where]:
    """The target: the deployment at --base-url, the mock at --mock-url (its fixture keys), or
    the bundled mock started for the run (stopped at the end)."""
    if not config.is_mock:
        assert config.base_url and config.api_key
        yield Where(
            config.base_url.rstrip("/"),
            config.api_key,
            second_key=config.second_key,
            restricted_key=config.restricted_key,
            same_person_key=config.same_person_key,
        )
        return
    if config.mock_url:
        where = mock_where(config.mock_url, fixture_keys())
        yield _own_keys(config, replace(where, control_token=config.mock_control_token))
        return
    if config.on_event is not None:
        config.on_event("wait", Wait.from_now(START_SECONDS, "the bundled mock to start"))
    try:
        mock = MockProcess(seed=seed).start(START_SECONDS)
    except MockStartError as exc:
        raise TargetUnreachable(str(exc)) from exc
    try:
        yield _own_keys(config, mock_where(mock.base_url, mock.keys))
    finally:
        mock.stop()


def _own_keys(config: RunConfig, where: Where) -> Where:
    """The mock's keys, with any the configuration gives instead."""
    return replace(
        where,
        api_key=config.api_key if config.mock_url and config.api_key else where.api_key,
        second_key=config.second_key or where.second_key,
        restricted_key=config.restricted_key or where.restricted_key,
        same_person_key=config.same_person_key or where.same_person_key,
    )


def _run_at(
    config: RunConfig, where: Where, checks: list[Check], seed: int, deadline: float | None
) -> Outcome:
    workers = worker_count(config, checks)
    if workers > 1:  # (never with a time budget: validate)
        from conformance.workers import run_workers

        return run_workers(config, where, checks, seed, workers)
    if config.mock_url and config.sandbox:
        with sandboxed(where.base_url, seed, where.control_token) as box:
            return execute(config, box, checks, seed, config.on_event, deadline=deadline)
    return execute(config, where, checks, seed, config.on_event, deadline=deadline)


@dataclass
class Outcome:
    """What running checks in one process found: their results, requests sent, notes."""

    results: list[CheckResult]
    requests: int = 0
    notes: list[str] = field(default_factory=list)
    setup_problem: str | None = None  # the run stopped: it cannot judge as set up


def execute(
    config: RunConfig,
    where: Where,
    checks: list[Check],
    seed: int,
    on_event: Listener | None = None,
    *,
    deadline: float | None = None,
) -> Outcome:
    """Run ``checks`` in this process against ``where`` (with ``config``'s options; the target
    is never started here), by ``deadline`` (``config.clock()`` time) where the run has a time
    budget. :class:`TargetUnreachable` when the contract cannot be fetched."""
    session = _session(config, where, seed, deadline)
    target = session.target
    try:
        target.request("GET", "/v1/openapi.json", operation_id="getOpenApi", auth="none")
        if target.control is not None:
            target.control.reset()
        if deadline is not None:
            _plan_budget(config, where, session, checks, on_event)
        results = run_checks(session, checks, on_event)
    except SetupProblem as exc:  # a rate window found stuck mid-run (target.py)
        return Outcome([], target.count, list(target.notes), setup_problem=str(exc))
    finally:
        session.close()
        target.close()
    return Outcome(results, target.count, list(target.notes))


def _session(config: RunConfig, where: Where, seed: int, deadline: float | None) -> Session:
    """The run's session: its target (``where``, with ``config``'s limits) and options."""
    target = Target(
        where.base_url,
        where.api_key,
        second_key=where.second_key,
        restricted_key=where.restricted_key,
        same_person_key=where.same_person_key,
        max_requests=config.max_requests,
        use_control=config.is_mock,
        control_token=where.control_token,
        sandbox=where.sandbox,
        timeout=config.timeout,
        wait_cap=config.wait_cap,
        sleep=config.sleep,
        clock=config.clock,
        deadline=deadline,
    )
    return Session(
        target=target,
        contract=Contract(config.document, config.effective_profile),
        seed=seed,
        allow_spend=config.allow_spend,
        allow_faults=config.allow_faults,
        mock=where.identity,
        receiver_listen=config.receiver_listen,
        receiver_url=config.receiver_url,
        webhook_wait=config.webhook_wait,
        job_wait=(
            default_job_wait(config.time_budget) if config.job_wait is None else config.job_wait
        ),
        long_video_url=config.long_video_url,
    )


def _plan_budget(
    config: RunConfig,
    where: Where,
    session: Session,
    checks: list[Check],
    on_event: Listener | None,
) -> None:
    """A run with a time budget: its plan (requests it may make, with the rate-limit probes it
    runs) set on the target, noted, and told to the listener (event ``plan``)."""
    probes = tuple(
        c.name
        for c in checks
        if c.run is not None
        and c.name in RATE_LIMIT_PROBES
        and (where.same_person_key or c.name not in SAME_PERSON_PROBES)
    )
    plan = _plan(config, session.target, session.contract, probes)
    session.target.max_requests = plan.requests
    session.target.notes.append(plan.describe())
    if on_event is not None:
        on_event("plan", plan)


def _plan(
    config: RunConfig, target: Target, contract: Contract, probes: tuple[str, ...] = ()
) -> Plan:
    """The run's request budget at the rate limit the deployment announces on an authenticated
    read (the first of the run), in the time left (conformance/plan.py), with the cost of the
    rate-limit ``probes`` it runs. Against the bundled mock the run moves the mock's clock
    through a rate window: the rate bounds no time there (and the probes work in sandboxes of
    their own at a low limit)."""
    if target.control is not None:
        return plan_run(config.max_requests, config.time_budget, target.time_left())
    read = next(
        (
            op
            for op in contract.held.iter_operations(include_inferred=False)
            if op.method == "GET" and not op.public and not op.path_parameters
        ),
        None,
    )
    rate = None
    if read is not None:
        try:
            exchange = target.request(read.method, read.path, operation_id=read.operation_id)
        except BudgetExhausted:
            exchange = None
        rate = read_rate(exchange) if exchange is not None else None
    stated = int(contract.full.rate_limit.get("requestsPerMinute", 0)) or None
    return plan_run(
        config.max_requests, config.time_budget, target.time_left(), rate, probes, stated
    )


def write_reports(report: Report, config: RunConfig) -> None:
    from conformance import reports

    if config.junit_xml:
        reports.write_junit(report, Path(config.junit_xml))
    if config.report_json:
        reports.write_json(report, Path(config.report_json))
    if config.report_html:
        reports.write_html(report, Path(config.report_html))
