"""Every stated rule of the interface document, traced to the checks that judge it.

The interface document (``interface-spec.md``, a copy beside this module) is cut into its stated
rules: each sentence of its prose and lists, and each row of its tables. ``rules.yaml`` maps each
one to the checks that judge it against any deployment, or to the reason no check can judge it
from outside (then, where the bundled mock's control plane can reach it, to the checks that judge
it against the mock: ``mock_checks``). :func:`problems` names every rule without either, every
entry that is not a rule of the document, and every check named that does not exist.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import yaml

#: Why a rule can have no check: the table's ``reason`` is one of these.
REASONS = {
    "descriptive": "it states purpose, naming or the document's own conventions: nothing a "
    "deployment could break",
    "not-shown": "the document says it is not shown: there is no rule to hold a deployment to",
    "client-duty": "it is a duty of the client or the receiver, not of the deployment",
    "outside-api": "it concerns the dashboard, the OAuth server or the provider's process, not "
    "this REST API",
    "unobservable": "a client cannot cause or see it through the API (see mock_checks for the "
    "bundled mock, whose control plane can)",
}

_SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
_ITEM = re.compile(r"^\s*(?:[-*]|\d+\.)\s+(.*)")
_SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-Z`])")


@dataclass(frozen=True)
class Unit:
    """One stated rule of the document: a sentence, or a table row as written."""

    section: str
    text: str


@dataclass(frozen=True)
class Rule:
    section: str
    text: str
    checks: tuple[str, ...] = ()
    mock_checks: tuple[str, ...] = ()
    reason: str | None = None
    why: str = ""

    @property
    def judged_by(self) -> tuple[str, ...]:
        return self.checks + self.mock_checks


@dataclass
class Trace:
    rules: list[Rule]
    units: list[Unit]
    problems: list[str] = field(default_factory=list)


def document_text() -> str:
    return resources.files("conformance").joinpath("interface-spec.md").read_text("utf-8")


def units(text: str) -> list[Unit]:
    """The document's stated rules, in order: sentences of prose and list items, table rows
    (header rows and separators left out). Headings name the section of what follows."""
    lines = text.splitlines()
    found: list[Unit] = []
    section = ""
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            for sentence in _SENTENCE_END.split(" ".join(paragraph)):
                if sentence.strip():
                    found.append(Unit(section, sentence.strip()))
            paragraph.clear()

    for i, line in enumerate(lines):
        if line.startswith("#"):
            flush()
            section = line.lstrip("#").strip()
        elif line.startswith("|"):
            flush()
            following = lines[i + 1] if i + 1 < len(lines) else ""
            if not _SEPARATOR.match(line.strip()) and not _SEPARATOR.match(following.strip()):
                found.append(Unit(section, line.strip()))
        elif match := _ITEM.match(line):
            flush()
            paragraph.append(match.group(1))
            flush()
        elif not line.strip():
            flush()
        else:
            paragraph.append(line.strip())
    flush()
    return found


@cache
def _table() -> dict[str, Any]:
    text = resources.files("conformance").joinpath("rules.yaml").read_text("utf-8")
    return yaml.safe_load(text)


def rules() -> list[Rule]:
    """The traced rules, in the document's order."""
    return [
        Rule(
            section=entry["section"],
            text=entry["rule"],
            checks=tuple(entry.get("checks", ())),
            mock_checks=tuple(entry.get("mock_checks", ())),
            reason=entry.get("reason"),
            why=entry.get("why", ""),
        )
        for entry in _table()["rules"]
    ]


def trace(check_names: Iterable[str], text: str | None = None) -> Trace:
    """The table held against the document and the registered checks."""
    known = set(check_names)
    table, stated = rules(), units(text if text is not None else document_text())
    result = Trace(table, stated)
    result.problems.extend(_coverage(table, stated))
    for rule in table:
        result.problems.extend(_entry_problems(rule, known))
    return result


def _coverage(table: list[Rule], stated: list[Unit]) -> Iterator[str]:
    # A sentence a section states twice ("Response fields: not shown.") is traced twice.
    traced = Counter((rule.section, rule.text) for rule in table)
    wanted = Counter((unit.section, unit.text) for unit in stated)
    for (section, text), count in wanted.items():
        if traced[section, text] < count:
            yield f"untraced rule ({section}): {text}"
    for (section, text), count in traced.items():
        if count > wanted[section, text]:
            yield f"not a rule of the document, or traced twice ({section}): {text}"


def _entry_problems(rule: Rule, known: set[str]) -> Iterator[str]:
    if not rule.checks and rule.reason is None:
        yield f"neither a check nor a reason: {rule.text}"
    if rule.checks and rule.reason is not None:
        yield f"both checks and a reason: {rule.text}"
    if rule.reason is not None and rule.reason not in REASONS:
        yield f"unknown reason {rule.reason!r}: {rule.text}"
    if rule.mock_checks and rule.reason != "unobservable":
        yield f"mock_checks belong to rules a client cannot observe: {rule.text}"
    for name in rule.judged_by:
        if name not in known:
            yield f"no check named {name!r}: {rule.text}"


def rules_of(check_name: str) -> list[Rule]:
    """The rules a check judges (against any deployment, or against the mock)."""
    return [rule for rule in rules() if check_name in rule.judged_by]


def render(selected: list[Rule], width: int = 100) -> str:
    """The rules as text: each under its section, with its checks or its reason."""
    import textwrap

    lines: list[str] = []
    section = None
    for rule in selected:
        if rule.section != section:
            section = rule.section
            lines += ["", f"## {section}"]
        lines += textwrap.wrap(rule.text, width, initial_indent="- ", subsequent_indent="  ")
        if rule.checks:
            lines.append("    judged by: " + ", ".join(rule.checks))
        else:
            why = f" ({rule.why})" if rule.why else ""
            lines += textwrap.wrap(
                f"not judged: {rule.reason}{why}", width, initial_indent="    ",
                subsequent_indent="      ",
            )  # fmt: skip
        if rule.mock_checks:
            lines.append("    against the bundled mock: " + ", ".join(rule.mock_checks))
    judged = sum(1 for r in selected if r.checks)
    mock = sum(1 for r in selected if not r.checks and r.mock_checks)
    summary = (
        f"{len(selected)} rules: {judged} judged against any deployment, {mock} only against "
        f"the bundled mock, {len(selected) - judged - mock} with a reason no check can judge them"
    )
    lines += ["", *textwrap.wrap(summary, width)]
    return "\n".join(lines).lstrip("\n")
