"""What a run found: failures, warnings and per-check results, gathered in a :class:`Report`.

:func:`totals` is the one count of a run that every format shows (terminal, JUnit, JSON, HTML;
its rule coverage is :func:`conformance.coverage.rule_coverage`); :func:`group_failures` and
:func:`group_warnings` fold the many alike into one entry with a count, as every report shows
them; :func:`root_causes` reads failures of several checks on one operation's one error status as
one cause; :func:`failed_first` orders checks as every report lists them.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.outcomes import CheckResult, Failure, Warning_

if TYPE_CHECKING:
    from conformance.coverage import Gate

NOTHING_JUDGED = "nothing judged"
EXIT_NOTHING_JUDGED = 3  # every check skipped: the run judged nothing, so it did not pass
SETUP_PROBLEM = "setup problem"  # the run could not judge: how it was set up must change
EXIT_SETUP_PROBLEM = 2  # as a usage error: the target or the options, not a broken rule
INSUFFICIENT_COVERAGE = "insufficient coverage"  # a gate (--min-rule-coverage, --require) unmet
EXIT_INSUFFICIENT_COVERAGE = 4  # distinct from 1: no rule was seen broken, too few were judged


@dataclass
class Report:
    base_url: str
    profile: str
    seed: int
    allow_spend: bool
    mock: bool
    checks: list[CheckResult] = field(default_factory=list)
    requests: int = 0
    max_requests: int | None = None
    notes: list[str] = field(default_factory=list)
    started: str = ""
    duration_seconds: float = 0.0  # wall time of the run, measured by conformance.api.run
    # the run's target and permissions as `conformance run` options (keys as "$VARIABLES")
    options: list[str] = field(default_factory=list)
    setup_problem: str | None = None  # one line saying what to change (verdict: setup problem)
    # CI gates (conformance/coverage.py gates): unmet, they make the verdict insufficient coverage
    min_rule_coverage: float | None = None  # --min-rule-coverage PCT
    require: list[str] = field(default_factory=list)  # --require CHECK|FAMILY

    @property
    def failures(self) -> list[Failure]:
        return [f for c in self.checks for f in c.failures]

    @property
    def warnings(self) -> list[Warning_]:
        return [w for c in self.checks for w in c.warnings]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def verdict(self) -> str:
        """``failed``, ``passed`` (a check judged something and none failed), or ``nothing
        judged``: a run whose every check was skipped has not passed. A run stopped by a
        ``setup problem`` judged nothing it could stand by. A run that broke no rule but missed
        a CI gate (:attr:`min_rule_coverage`, :attr:`require`) has ``insufficient coverage``;
        a broken rule, a setup problem and nothing judged say more, and win over it."""
        if self.setup_problem:
            return SETUP_PROBLEM
        if self.failures:
            return "failed"
        if not any(c.status == "passed" for c in self.checks):
            return NOTHING_JUDGED
        if self.unmet_gates():
            return INSUFFICIENT_COVERAGE
        return "passed"

    @property
    def exit_code(self) -> int:
        codes = {
            "passed": 0,
            "failed": 1,
            SETUP_PROBLEM: EXIT_SETUP_PROBLEM,
            INSUFFICIENT_COVERAGE: EXIT_INSUFFICIENT_COVERAGE,
        }
        return codes.get(self.verdict, EXIT_NOTHING_JUDGED)

    def unmet_gates(self) -> list[Gate]:
        """The CI gates this run missed (none when it has no gates)."""
        from conformance.coverage import gates

        return [gate for gate in gates(self) if not gate.met]

    def result(self, name: str) -> CheckResult | None:
        return next((c for c in self.checks if c.name == name), None)

    def failed_checks(self) -> list[str]:
        return [c.name for c in self.checks if c.failures]

    def to_dict(self) -> dict[str, Any]:
        from conformance.coverage import gates, rule_coverage

        coverage = rule_coverage(self)
        return {
            "target": self.base_url,
            "profile": self.profile,
            "seed": self.seed,
            "allowSpend": self.allow_spend,
            "mock": self.mock,
            "started": self.started,
            "durationSeconds": round(self.duration_seconds, 3),
            "requests": self.requests,
            "maxRequests": self.max_requests,
            "ok": self.ok,
            "verdict": self.verdict,
            "exitCode": self.exit_code,
            "notes": list(self.notes),
            "setupProblem": self.setup_problem,
            "summary": totals(self).to_dict(),
            "rules": coverage.to_dict(),
            "gates": [gate.to_dict() for gate in gates(self, coverage)],
            "rootCauses": [cause.to_dict() for cause in root_causes(self.failures)],
            "checks": [c.to_dict() for c in self.checks],
        }


@dataclass(frozen=True)
class Totals:
    """The counts of one run, as every report states them."""

    verdict: str
    checks: int
    checks_passed: int
    checks_failed: int
    checks_skipped: int
    requests: int
    judgements: int
    judgements_passed: int
    judgements_failed: int
    duration_seconds: float  # rounded to milliseconds, so every format shows the same number
    seed: int
    profile: str
    target: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "checks": self.checks,
            "checksPassed": self.checks_passed,
            "checksFailed": self.checks_failed,
            "checksSkipped": self.checks_skipped,
            "requests": self.requests,
            "judgements": self.judgements,
            "judgementsPassed": self.judgements_passed,
            "judgementsFailed": self.judgements_failed,
            "durationSeconds": self.duration_seconds,
            "seed": self.seed,
            "profile": self.profile,
            "target": self.target,
        }


def totals(report: Report) -> Totals:
    """The one computation of a run's totals; every report format uses it."""
    statuses = Counter(c.status for c in report.checks)
    passed = sum(c.passed for c in report.checks)
    failed = sum(c.failed for c in report.checks)
    return Totals(
        verdict=report.verdict,
        checks=len(report.checks),
        checks_passed=statuses["passed"],
        checks_failed=statuses["failed"],
        checks_skipped=statuses["skipped"],
        requests=report.requests,
        judgements=passed + failed,
        judgements_passed=passed,
        judgements_failed=failed,
        duration_seconds=round(report.duration_seconds, 3),
        seed=report.seed,
        profile=report.profile,
        target=report.base_url,
    )


SHOWN_PER_RULE = 5  # failures of one (check, rule) shown in full; the rest are counted


@dataclass
class FailureGroup:
    """The failures of one rule of one check: the first few shown, the rest counted."""

    check: str
    rule: str
    failures: list[Failure]
    limit: int = SHOWN_PER_RULE

    @property
    def shown(self) -> list[Failure]:
        return self.failures[: self.limit]

    @property
    def rest(self) -> list[Failure]:
        return self.failures[self.limit :]

    @property
    def occurrences(self) -> int:
        return sum(f.occurrences for f in self.failures)

    @property
    def more(self) -> int:
        """How many more like these were seen (repeats of the shown ones are counted on them)."""
        return sum(f.occurrences for f in self.rest)

    def more_subjects(self, limit: int = 8) -> tuple[list[str], int]:
        """The distinct subjects of the failures not shown (at most ``limit``), and how many
        more there are."""
        subjects = list(dict.fromkeys(f.subject for f in self.rest if f.subject))
        return subjects[:limit], max(0, len(subjects) - limit)


def failed_first(results: list[CheckResult]) -> list[CheckResult]:
    """The checks with the failed ones first, each part in the run's order."""
    return sorted(results, key=lambda r: r.status != "failed")


def group_failures(failures: list[Failure], limit: int = SHOWN_PER_RULE) -> list[FailureGroup]:
    """Failures grouped by (check, rule), in the order each group was first seen."""
    groups: dict[tuple[str, str], FailureGroup] = {}
    for failure in failures:
        key = (failure.check, failure.rule)
        if key not in groups:
            groups[key] = FailureGroup(failure.check, failure.rule, [], limit)
        groups[key].failures.append(failure)
    return list(groups.values())


@dataclass
class RootCause:
    """Failures of two or more checks on exchanges of one operation that answered one status:
    most likely one fault of the deployment, read as one cause before the rules it broke."""

    operation: str  # the operation id, else "METHOD /path"
    method: str
    path: str  # the path of the first such exchange
    status: int
    failures: list[Failure]

    @property
    def checks(self) -> list[str]:
        return list(dict.fromkeys(f.check for f in self.failures))

    @property
    def occurrences(self) -> int:
        return sum(f.occurrences for f in self.failures)

    @property
    def label(self) -> str:
        """``POST /v1/projects`` (with the operation id when it has one: ``createProject
        (POST /v1/projects)``)."""
        request = f"{self.method} {self.path}"
        return request if self.operation == request else f"{self.operation} ({request})"

    def headline(self, limit: int = 8) -> str:
        """``POST /v1/projects answered 500 in 6 checks: a, b, ...``"""
        names = self.checks
        shown = ", ".join(names[:limit]) + (
            f" and {len(names) - limit} more" if len(names) > limit else ""
        )
        return (
            f"{self.label} answered {self.status} in {len(names)} checks: {shown} "
            f"({self.occurrences} failure(s))"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "operation": self.operation,
            "method": self.method,
            "path": self.path,
            "status": self.status,
            "checks": self.checks,
            "failures": self.occurrences,
            "summary": self.headline(limit=len(self.checks)),
        }


def root_causes(failures: list[Failure]) -> list[RootCause]:
    """Failures grouped by the operation and error status (400 and above) of their exchanges,
    where two or more checks failed on it; the most checks first. A success status is no cause:
    checks failing on one 200 judged different parts of it."""
    groups: dict[tuple[str, int], RootCause] = {}
    for failure in failures:
        exchange = failure.exchange
        if exchange is None or exchange.status < 400:
            continue
        operation = exchange.operation_id or f"{exchange.method} {exchange.path}"
        key = (operation, exchange.status)
        if key not in groups:
            groups[key] = RootCause(operation, exchange.method, exchange.path, exchange.status, [])
        groups[key].failures.append(failure)
    found = [cause for cause in groups.values() if len(cause.checks) >= 2]
    return sorted(found, key=lambda c: (-len(c.checks), -c.occurrences))


_VARIABLE = re.compile(r"'[^']*'|\"[^\"]*\"|\d+")


def warning_kind(message: str) -> str:
    """A warning's message with what varies (quoted values, numbers) as ``…``."""
    return _VARIABLE.sub("…", message)


@dataclass
class WarningGroup:
    """Warnings of one check that say the same thing about different values."""

    check: str
    kind: str
    warnings: list[Warning_]

    @property
    def count(self) -> int:
        return sum(w.occurrences for w in self.warnings)

    @property
    def example(self) -> str:
        return self.warnings[0].message

    def subjects(self, limit: int = 8) -> tuple[list[str], int]:
        subjects = list(dict.fromkeys(w.subject for w in self.warnings if w.subject))
        return subjects[:limit], max(0, len(subjects) - limit)

    def variants(self, limit: int = 3) -> list[str]:
        return list(dict.fromkeys(w.message for w in self.warnings))[:limit]


def group_warnings(warnings: list[Warning_]) -> list[WarningGroup]:
    """Warnings grouped by check and message pattern, most frequent first."""
    groups: dict[tuple[str, str], WarningGroup] = {}
    for warning in warnings:
        key = (warning.check, warning_kind(warning.message))
        if key not in groups:
            groups[key] = WarningGroup(warning.check, key[1], [])
        groups[key].warnings.append(warning)
    return sorted(groups.values(), key=lambda g: -g.count)
