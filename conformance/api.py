"""Running the suite from code: :func:`run` with a :class:`RunConfig` answers a :class:`Report`.

Example::

    from conformance.api import RunConfig, run

    report = run(RunConfig(base_url="https://api.example.com", api_key=key, max_requests=500,
                           seed=1, only=["envelope", "auth"]))
    print(report.exit_code, report.failed_checks())

``run`` raises :class:`UsageError` for a configuration that cannot run and
:class:`TargetUnreachable` when the deployment does not answer at all (the command line turns both
into exit status 2); every finding of a run that did reach the deployment is in the report.
The command line (``conformance run``) and the pytest plugin both call this function.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from conformance.checks import Check, SelectionError, select, shard
from conformance.contract import Contract
from conformance.mockprocess import MockProcess, MockStartError, fixture_keys, owner_key
from conformance.profiles import PROFILES
from conformance.receiver import parse_listen
from conformance.results import Report
from conformance.runner import Listener, MockIdentity, Session, run_checks
from conformance.target import Target, TargetUnreachable

__all__ = ["RunConfig", "TargetUnreachable", "UsageError", "run"]


class UsageError(ValueError):
    """The configuration cannot run (exit status 2)."""


@dataclass
class RunConfig:
    """Everything a run needs; mirrors ``conformance run``'s options."""

    base_url: str | None = None
    api_key: str | None = None
    second_key: str | None = None
    mock: bool = False
    mock_url: str | None = None  # the bundled mock, already running (default fixtures)
    profile: str | None = None  # default: contract for base_url, full for mock
    allow_spend: bool = False
    max_requests: int | None = None
    seed: int | None = None
    only: list[str] = field(default_factory=list)
    skip: list[str] = field(default_factory=list)
    shard: tuple[int, int] | None = None  # (index from 1, count): this job's part of the run
    receiver_listen: str = "127.0.0.1:0"
    receiver_url: str | None = None
    webhook_wait: float = 60.0  # seconds to wait for deliveries from a real deployment
    junit_xml: Path | str | None = None
    report_json: Path | str | None = None
    report_html: Path | str | None = None
    timeout: float = 30.0
    wait_cap: float = 120.0  # the longest single wait for a real deployment's Retry-After
    mock_defects: list[str] = field(default_factory=list)  # test only: --defect for the mock
    document: dict[str, Any] | None = None  # the contract (default: the bundled spec)
    sleep: Callable[[float], None] = time.sleep
    on_event: Listener | None = None

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
        if config.receiver_url and not _acceptable_receiver(config.receiver_url):
            raise UsageError("--receiver-url must be an https URL a deployment can reach")
    if config.effective_profile not in PROFILES:
        raise UsageError(f"--profile must be one of {', '.join(PROFILES)}")
    if config.max_requests is not None and config.max_requests < 1:
        raise UsageError("--max-requests must be at least 1")
    try:
        parse_listen(config.receiver_listen)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        checks = select(config.only, config.skip)
    except SelectionError as exc:
        raise UsageError(str(exc)) from None
    if config.shard is not None:
        index, count = config.shard
        if not 1 <= index <= count:
            raise UsageError(f"--shard {index}/{count}: give I/N with 1 <= I <= N")
        checks = shard(checks, index, count)
    return checks


def _acceptable_receiver(url: str) -> bool:
    """HTTPS, as deployments require; plain http only on loopback (a local test deployment)."""
    parts = urlsplit(url)
    loopback = parts.hostname in ("127.0.0.1", "localhost", "::1")
    return parts.scheme == "https" or (parts.scheme == "http" and loopback)


def run(config: RunConfig) -> Report:
    """Run the suite as configured; the report of what it found."""
    checks = validate(config)
    seed = config.seed if config.seed is not None else random.randrange(2**31)
    started = time.monotonic()
    mock: MockProcess | None = None
    identity: MockIdentity | None = None
    base_url, api_key, second_key = config.base_url, config.api_key, config.second_key
    if config.mock:
        try:
            mock = MockProcess(seed=seed, defects=tuple(config.mock_defects)).start()
        except MockStartError as exc:
            raise TargetUnreachable(str(exc)) from exc
        primary = mock.owner_key()
        assert primary is not None
        other = mock.owner_key(other_than=primary.workspace)
        base_url, api_key = mock.base_url, primary.key
        second_key = second_key or (other.key if other else None)
        identity = MockIdentity(primary.workspace, primary.member)
    elif config.mock_url:
        keys = fixture_keys()
        primary = owner_key(keys)
        assert primary is not None
        other = owner_key(keys, other_than=primary.workspace)
        base_url, api_key = config.mock_url.rstrip("/"), api_key or primary.key
        second_key = second_key or (other.key if other else None)
        identity = MockIdentity(primary.workspace, primary.member)
    assert base_url and api_key
    target = Target(
        base_url,
        api_key,
        second_key=second_key,
        max_requests=config.max_requests,
        use_control=config.is_mock,
        timeout=config.timeout,
        wait_cap=config.wait_cap,
        sleep=config.sleep,
    )
    session = Session(
        target=target,
        contract=Contract(config.document, config.effective_profile),
        seed=seed,
        allow_spend=config.allow_spend,
        mock=identity,
        receiver_listen=config.receiver_listen,
        receiver_url=config.receiver_url,
        webhook_wait=config.webhook_wait,
    )
    report = Report(
        base_url=base_url,
        profile=config.effective_profile,
        seed=seed,
        allow_spend=config.allow_spend,
        mock=config.is_mock,
        max_requests=config.max_requests,
        started=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )
    try:
        target.request("GET", "/v1/openapi.json", operation_id="getOpenApi", auth="none")
        if target.control is not None:
            target.control.reset()
        report.checks = run_checks(session, checks, config.on_event)
    finally:
        session.close()
        target.close()
        if mock is not None:
            mock.stop()
    report.requests = target.count
    report.notes = list(target.notes)
    report.duration = time.monotonic() - started
    write_reports(report, config)
    return report


def write_reports(report: Report, config: RunConfig) -> None:
    from conformance import reports

    if config.junit_xml:
        reports.write_junit(report, Path(config.junit_xml))
    if config.report_json:
        reports.write_json(report, Path(config.report_json))
    if config.report_html:
        reports.write_html(report, Path(config.report_html))
