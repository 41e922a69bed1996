"""What a run found: failures, warnings and per-check results, gathered in a :class:`Report`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from conformance.target import Exchange

NOTHING_JUDGED = "nothing judged"
EXIT_NOTHING_JUDGED = 3  # every check skipped: the run judged nothing, so it did not pass


@dataclass
class Failure:
    """One broken rule, with what reproduces it."""

    check: str
    rule: str
    message: str
    quote: str = ""  # the contract's words for the rule
    subject: str = ""  # the operation (or what the rule was applied to)
    exchange: Exchange | None = None
    seed: int | None = None
    occurrences: int = 1
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "rule": self.rule,
            "message": self.message,
            "quote": self.quote,
            "subject": self.subject,
            "occurrences": self.occurrences,
            "seed": self.seed,
            "exchange": self.exchange.to_dict() if self.exchange else None,
            **({"extra": self.extra} if self.extra else {}),
        }


@dataclass
class Warning_:
    check: str
    message: str
    subject: str = ""
    occurrences: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "message": self.message,
            "subject": self.subject,
            "occurrences": self.occurrences,
        }


@dataclass
class CheckResult:
    name: str
    family: str
    description: str
    requests: int = 0
    passed: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> how many
    failures: list[Failure] = field(default_factory=list)
    warnings: list[Warning_] = field(default_factory=list)
    ran: bool = False

    @property
    def failed(self) -> int:
        return sum(f.occurrences for f in self.failures)

    @property
    def judgements(self) -> int:
        """Judgements made: observations held to a rule, passing or failing (not requests)."""
        return self.passed + self.failed

    @property
    def status(self) -> str:
        if self.failures:
            return "failed"
        if self.passed:
            return "passed"
        return "skipped"

    def skip_summary(self) -> str:
        return "; ".join(
            f"{reason} ({n})" if n > 1 else reason for reason, n in self.skipped.most_common()
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "family": self.family,
            "description": self.description,
            "status": self.status,
            "requests": self.requests,
            "judgements": self.judgements,
            "passed": self.passed,
            "failed": self.failed,
            "skipped": dict(self.skipped),
            "failures": [f.to_dict() for f in self.failures],
            "warnings": [w.to_dict() for w in self.warnings],
        }


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
    duration: float = 0.0

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
        judged``: a run whose every check was skipped has not passed."""
        if self.failures:
            return "failed"
        if any(c.status == "passed" for c in self.checks):
            return "passed"
        return NOTHING_JUDGED

    @property
    def exit_code(self) -> int:
        return {"passed": 0, "failed": 1}.get(self.verdict, EXIT_NOTHING_JUDGED)

    def result(self, name: str) -> CheckResult | None:
        return next((c for c in self.checks if c.name == name), None)

    def failed_checks(self) -> list[str]:
        return [c.name for c in self.checks if c.failures]

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.base_url,
            "profile": self.profile,
            "seed": self.seed,
            "allowSpend": self.allow_spend,
            "mock": self.mock,
            "started": self.started,
            "durationSeconds": round(self.duration, 3),
            "requests": self.requests,
            "maxRequests": self.max_requests,
            "ok": self.ok,
            "verdict": self.verdict,
            "exitCode": self.exit_code,
            "notes": list(self.notes),
            "summary": {
                **{
                    status: sum(1 for c in self.checks if c.status == status)
                    for status in ("passed", "failed", "skipped")
                },
                "requests": self.requests,
                "judgements": sum(c.judgements for c in self.checks),
            },
            "checks": [c.to_dict() for c in self.checks],
        }
