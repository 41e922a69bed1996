"""Every stated rule of the interface document is traced to a check, or to a reason none can judge
it from outside (conformance/rules.yaml); the tracing itself is held to the document."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.checks import all_checks
from conformance.rules import REASONS, document_text, rules, trace, units

SHARED = Path(__file__).resolve().parents[3] / "shared" / "contract" / "interface-spec.md"


def check_names() -> set[str]:
    return {c.name for c in all_checks()}


def named_in_the_table() -> set[str]:
    return {name for rule in rules() for name in rule.judged_by}


def test_every_stated_rule_has_a_check_or_a_reason():
    problems = trace(check_names()).problems
    assert not problems, "\n".join(problems)


@pytest.mark.skipif(
    not SHARED.exists(), reason="the interface document is not beside this checkout"
)
def test_the_copy_beside_the_suite_is_the_interface_document():
    assert document_text() == SHARED.read_text(encoding="utf-8")


def test_nothing_of_the_document_is_left_out_of_the_rules():
    """Every word of every line that is not a heading, a table's header row or a separator is in
    some rule, so a rule cannot hide in a part of the document the cutting skips."""
    text = document_text()
    cut = " ".join(u.text for u in units(text))
    lines = text.splitlines()
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if line.startswith("#") or re.match(r"^\|[\s:|-]+\|$", following.strip() or "x"):
            continue
        for word in re.findall(r"[A-Za-z_][\w-]{3,}", line):
            assert word in cut, (i + 1, word, line)


def test_every_check_counts_for_a_stated_rule():
    """A check's judgements count in the verdict's rule coverage only through the rules that
    name it: a check no rule names would judge a run and leave the headline at "0 of N judged"
    (as schema-stateful did, run alone, until it was named for the job read its links reach)."""
    assert check_names() - named_in_the_table() == set()


def test_a_new_sentence_in_the_document_is_untraced():
    text = document_text().replace(
        "Bodies are JSON.", "Bodies are JSON. Every answer arrives within a second."
    )
    problems = trace(named_in_the_table(), text).problems
    assert problems == [
        "untraced rule (Content Generation and Campaign Automation Service: Interface "
        "Specification): Every answer arrives within a second."
    ]


def test_a_changed_sentence_no_longer_matches_its_entry():
    text = document_text().replace("Bodies are JSON.", "Bodies are XML.")
    problems = trace(named_in_the_table(), text).problems
    assert any(p.startswith("untraced rule") and "Bodies are XML." in p for p in problems)
    assert any(p.startswith("not a rule of the document") and "JSON" in p for p in problems)


def test_a_check_that_does_not_exist_is_named():
    names = named_in_the_table() - {"auth-missing-key"}
    problems = trace(names).problems
    assert problems and all("'auth-missing-key'" in p for p in problems)


def test_rules_a_client_cannot_observe_are_judged_against_the_mock_where_it_can_reach_them():
    unobservable = [r for r in rules() if r.reason == "unobservable"]
    assert unobservable
    reached = [r for r in unobservable if r.mock_checks]
    # The credential store outage, key revocation, the kill switch, qa_failed, legacy cursors.
    assert len(reached) >= 5
    for rule in unobservable:
        assert rule.why, rule.text


def test_the_reasons_are_few_and_explained():
    used = {r.reason for r in rules() if r.reason}
    assert used <= set(REASONS)
    judged = [r for r in rules() if r.checks]
    # Most of what the document states is judged against any deployment.
    assert len(judged) > 2 * (len(rules()) - len(judged))
