"""What one check found: its failures, its warnings and its result.

The records a check writes as it runs (conformance/context.py) and every report reads; the
whole run's :class:`~conformance.results.Report` is conformance/results.py's.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from conformance.target import Exchange

_PYTHON_NONE = re.compile(r"\bNone\b")


def without_none(text: str) -> str:
    """``text`` with Python's ``None`` (an f-string's rendering of a missing value, such as the
    code of a body that has none) as ``(none)``: what people read never says ``None``."""
    return _PYTHON_NONE.sub("(none)", text)


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

    def __post_init__(self) -> None:
        self.message = without_none(self.message)

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

    def __post_init__(self) -> None:
        self.message = without_none(self.message)

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
            without_none(f"{reason} ({n})" if n > 1 else reason)
            for reason, n in self.skipped.most_common()
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
            "skipped": {without_none(reason): n for reason, n in self.skipped.items()},
            "failures": [f.to_dict() for f in self.failures],
            "warnings": [w.to_dict() for w in self.warnings],
        }
