"""Rule coverage: how many of the stated rules a run judged, which it did not, and why.

:func:`rule_coverage` is the one computation every format shows (terminal, JSON, JUnit, HTML),
from a finished :class:`~conformance.results.Report`, the rules of ``rules.yaml``
(:func:`conformance.rules.rules`) and the kind of target (``report.mock``):

* **stated**: every rule of the table;
* **judgeable**: the rules with ``checks`` (judged against any deployment); against the bundled
  mock also the rules whose only checks are ``mock_checks`` (its control plane reaches them);
* **judged**: a judgeable rule is judged when at least one of its checks (and, against the
  mock, its ``mock_checks``) made at least one judgement in this run. This is at *check*
  granularity: a check judges all its rules or none as far as this count knows, so a rule is
  counted judged when its check judged anything at all, even if that was one of its other rules;
* **not judged**: every other judgeable rule, with a reason derived from its checks' skip
  reasons (:attr:`CheckResult.skipped`) and from the selection (a check absent from the report
  was not selected), each with a short stable category id (:data:`CATEGORIES`).

Per family, each rule counts for the family of its first check in ``rules.yaml`` (its
``checks``, then its ``mock_checks``): the family that judges it first, whatever this run did.

:func:`gates` holds the report to its CI gates (``--min-rule-coverage``, ``--require``); an
unmet gate makes the verdict ``insufficient coverage`` (exit 4) when no rule is broken.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from conformance.checks import FAMILIES, Check, all_checks
from conformance.outcomes import CheckResult, without_none
from conformance.results import Report
from conformance.rules import Rule, rules
from conformance.skips import NEEDS_CONTROL, NEEDS_CREATE, NEEDS_SPEND
from conformance.target import BUDGET_USED_UP, TIME_BUDGET_USED_UP

#: Why a judgeable rule was not judged: category id -> how a count of them reads ("40 need
#: --allow-spend"). In this order one reason wins over the next (the most actionable first).
CATEGORIES: dict[str, str] = {
    "needs-allow-spend": "need --allow-spend",
    "needs-option": "need an option",
    "needs-mock": "need the bundled mock (its control plane or fixtures)",
    "request-budget": "ran out of requests (--max-requests)",
    "time-budget": "ran out of time (the time budget)",
    "not-reached": "never reached the state they need",
    "not-selected": "not selected",
}
NOT_REACHED = "the deployment never reached the state"
NOT_SELECTED = "not selected (--only, --skip or --shard left the check out)"
ONLY_WHEN_NAMED = "not selected: the check runs only when --only names it"
_CONTROL_PLANE = NEEDS_CONTROL.removesuffix(" (--mock)")  # "needs the bundled mock's control plane"
_OPTION = re.compile(r"--[a-z][a-z-]*")


@dataclass(frozen=True)
class NotJudged:
    """A judgeable rule this run did not judge, and why."""

    rule: Rule
    checks: tuple[str, ...]  # the checks that could have judged it against this target
    check: str  # the one whose reason is given
    reason: str
    category: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule.text,
            "section": self.rule.section,
            "checks": list(self.checks),
            "check": self.check,
            "reason": self.reason,
            "category": self.category,
        }


@dataclass(frozen=True)
class FamilyCoverage:
    judgeable: int
    judged: int

    def to_dict(self) -> dict[str, int]:
        return {"judgeable": self.judgeable, "judged": self.judged}


@dataclass(frozen=True)
class Coverage:
    """The rules a run judged, of those its target makes judgeable."""

    stated: int
    judgeable: int
    judged: int
    families: dict[str, FamilyCoverage]  # in the order of conformance.checks.FAMILIES
    not_judged: list[NotJudged]  # in the document's order

    @property
    def percent(self) -> float:
        """Judged of judgeable, in percent, to one decimal (as every format shows it)."""
        return round(100 * self.judged / self.judgeable, 1) if self.judgeable else 0.0

    def by_category(self) -> dict[str, int]:
        """How many rules were not judged for each reason, in :data:`CATEGORIES` order."""
        counts = Counter(n.category for n in self.not_judged)
        return {category: counts[category] for category in CATEGORIES if counts[category]}

    def by_reason(self) -> list[tuple[str, str, list[NotJudged]]]:
        """The rules not judged grouped by their reason: (category, reason, rules), in
        :data:`CATEGORIES` order, then the most rules first."""
        groups: dict[tuple[str, str], list[NotJudged]] = {}
        for entry in self.not_judged:
            groups.setdefault((entry.category, entry.reason), []).append(entry)
        order = list(CATEGORIES)
        ranked = sorted(groups.items(), key=lambda kv: (order.index(kv[0][0]), -len(kv[1])))
        return [(category, reason, entries) for (category, reason), entries in ranked]

    def headline(self) -> str:
        """``148 of 236 judgeable rules judged (62.7%); 88 not judged: 40 need --allow-spend,
        ...``"""
        line = f"{self.judged} of {self.judgeable} judgeable rules judged ({self.percent:g}%)"
        if not self.not_judged:
            return line
        counts = ", ".join(f"{n} {CATEGORIES[c]}" for c, n in self.by_category().items())
        return f"{line}; {len(self.not_judged)} not judged: {counts}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "stated": self.stated,
            "judgeable": self.judgeable,
            "judged": self.judged,
            "percent": self.percent,
            "families": {name: f.to_dict() for name, f in self.families.items()},
            "notJudgedByCategory": self.by_category(),
            "notJudged": [n.to_dict() for n in self.not_judged],
        }


def rule_coverage(report: Report) -> Coverage:
    """The one computation of a run's rule coverage; every report format uses it."""
    registry = {c.name: c for c in all_checks()}
    results = {r.name: r for r in report.checks}
    stated = rules()
    judgeable: list[tuple[Rule, tuple[str, ...]]] = []
    for rule in stated:
        checks = rule.checks + (rule.mock_checks if report.mock else ())
        if checks:
            judgeable.append((rule, checks))
    counts: dict[str, list[int]] = {}
    not_judged = []
    for rule, checks in judgeable:
        family = counts.setdefault(_family(registry, checks[0]), [0, 0])
        family[0] += 1
        if any(results[c].judgements for c in checks if c in results):
            family[1] += 1
            continue
        check, reason, category = _why_not(checks, results, registry)
        not_judged.append(NotJudged(rule, checks, check, reason, category))
    order = {name: i for i, name in enumerate(FAMILIES)}
    families = {
        name: FamilyCoverage(*counts[name])
        for name in sorted(counts, key=lambda n: order.get(n, len(order)))
    }
    return Coverage(
        stated=len(stated),
        judgeable=len(judgeable),
        judged=len(judgeable) - len(not_judged),
        families=families,
        not_judged=not_judged,
    )


def _family(registry: dict[str, Check], name: str) -> str:
    check = registry.get(name)
    return check.family if check is not None else "unknown"


def _why_not(
    checks: tuple[str, ...], results: dict[str, CheckResult], registry: dict[str, Check]
) -> tuple[str, str, str]:
    """(the check, the reason, its category) that best says why none of ``checks`` judged: the
    most actionable category, then the first check."""
    found = [(name, *check_reason(results.get(name), registry.get(name))) for name in checks]
    order = list(CATEGORIES)
    name, reason, category = min(found, key=lambda item: order.index(item[2]))
    return name, f"{name}: {reason}", category


def check_reason(result: CheckResult | None, check: Check | None = None) -> tuple[str, str]:
    """(reason, category) for a check that made no judgement: its own skip reason (the most
    actionable of them, then the most frequent), or that it was not selected."""
    if result is None:
        if check is not None and check.only_when_selected:
            return ONLY_WHEN_NAMED, "not-selected"
        return NOT_SELECTED, "not-selected"
    order = list(CATEGORIES)
    ranked = sorted(result.skipped.most_common(), key=lambda item: order.index(categorize(item[0])))
    reason = without_none(ranked[0][0]) if ranked else "nothing to judge"
    category = categorize(reason)
    return (f"{NOT_REACHED}: {reason}" if category == "not-reached" else reason), category


def options_named(entries: list[NotJudged]) -> list[str]:
    """The options the reasons of ``entries`` ask for (``--second-key``...), most asked first."""
    asked = Counter(option for n in entries for option in set(_OPTION.findall(n.reason)))
    return [option for option, _ in asked.most_common()]


def categorize(reason: str) -> str:
    """The category id of one skip reason (see :data:`CATEGORIES`)."""
    if reason in (NEEDS_SPEND, NEEDS_CREATE) or "--allow-spend" in reason:
        return "needs-allow-spend"
    options = _OPTION.findall(reason)
    if reason.startswith(_CONTROL_PLANE) or (reason.startswith("needs ") and options == ["--mock"]):
        return "needs-mock"
    if reason.startswith("needs ") and options:
        return "needs-option"
    if reason.startswith(BUDGET_USED_UP):
        return "request-budget"
    if reason.startswith(TIME_BUDGET_USED_UP):
        return "time-budget"
    return "not-reached"


# -- CI gates -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gate:
    """One CI gate and whether the run met it."""

    option: str  # as given: "--min-rule-coverage 90", "--require webhooks"
    met: bool
    detail: str  # what was found; for an unmet gate, by how much it was missed

    def to_dict(self) -> dict[str, Any]:
        return {"gate": self.option, "met": self.met, "detail": self.detail}


def gates(report: Report, coverage: Coverage | None = None) -> list[Gate]:
    """The report's gates (``report.min_rule_coverage``, ``report.require``), each judged.

    ``--min-rule-coverage PCT`` is met when at least PCT percent of the judgeable rules were
    judged (compared exactly, not as rounded for display). ``--require CHECK`` is met when the
    check made a judgement; ``--require FAMILY`` when every check of the family that this
    target can run made one. Against a deployment (not the bundled mock) a family's checks that
    need the mock's control plane are left out of that: those ``rules.yaml`` names only as
    ``mock_checks``, and those that skipped only for wanting the control plane. Named alone,
    such a check is still required.
    """
    if report.min_rule_coverage is None and not report.require:
        return []
    coverage = coverage or rule_coverage(report)
    found = []
    if report.min_rule_coverage is not None:
        found.append(_coverage_gate(coverage, report.min_rule_coverage))
    registry = {c.name: c for c in all_checks()}
    for name in report.require:
        found.append(_require_gate(report, name, registry))
    return found


def _coverage_gate(coverage: Coverage, minimum: float) -> Gate:
    option = f"--min-rule-coverage {minimum:g}"
    needed = math.ceil(minimum * coverage.judgeable / 100 - 1e-9)
    judged = (
        f"{coverage.judged} of {coverage.judgeable} judgeable rules judged ({coverage.percent:g}%)"
    )
    if coverage.judged >= needed:
        return Gate(option, True, judged)
    short = needed - coverage.judged
    points = minimum - 100 * coverage.judged / coverage.judgeable
    return Gate(
        option, False, f"{judged}: {points:.1f} points short, {short} more rule(s) to judge"
    )


def _require_gate(report: Report, name: str, registry: dict[str, Check]) -> Gate:
    option = f"--require {name}"
    results = {r.name: r for r in report.checks}
    if name in registry:
        wanted = [name]
    else:
        wanted = [c for c, check in registry.items() if check.family == name]
        if not report.mock:
            wanted = [c for c in wanted if not _needs_mock(c, results.get(c))]
    missing = [c for c in wanted if not (c in results and results[c].judgements)]
    if not missing:
        what = "judged" if len(wanted) == 1 else f"all {len(wanted)} checks judged"
        return Gate(option, True, what)
    why = "; ".join(f"{c}: {check_reason(results.get(c), registry.get(c))[0]}" for c in missing)
    return Gate(option, False, f"{len(missing)} of {len(wanted)} check(s) judged nothing: {why}")


def _needs_mock(name: str, result: CheckResult | None) -> bool:
    """Whether ``name`` cannot judge a deployment: rules.yaml names it only as a mock check, or
    it skipped only for wanting the bundled mock's control plane."""
    if name in _mock_only_checks():
        return True
    if result is None or result.judgements or not result.skipped:
        return False
    return all(categorize(reason) == "needs-mock" for reason in result.skipped)


def _mock_only_checks() -> set[str]:
    table = rules()
    anywhere = {c for rule in table for c in rule.checks}
    return {c for rule in table for c in rule.mock_checks} - anywhere
