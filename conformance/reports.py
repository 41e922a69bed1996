"""Reports of a run: JUnit XML (one test case per check), JSON, and one self-contained HTML page.

Every format states the same totals (:func:`conformance.results.totals`) and the same rule
coverage (:func:`conformance.coverage.rule_coverage`), and folds many failures of one rule into
the first few, shown in full, and a count of the rest.

In JUnit the rule coverage is the ``conformance`` suite's properties (``rulesStated``,
``rulesJudgeable``, ``rulesJudged``, ``rulesPercent``, ``rulesNotJudged.<category>``) and its
``<system-out>`` (the headline, then every rule not judged with its reason); the CI gates, when
the run has any, are a second suite, ``conformance-gates``, with one test case per gate that
fails when the gate is unmet, so that CI tools show it beside the checks.
"""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

from conformance.coverage import Coverage, Gate, gates, rule_coverage
from conformance.outcomes import CheckResult, Failure
from conformance.results import Report, group_failures, group_warnings, totals

__all__ = [
    "failure_text",
    "html_page",
    "junit",
    "rerun_command",
    "write_html",
    "write_json",
    "write_junit",
]


# What XML 1.0 cannot carry and HTML shows badly: control characters (tab, newline and carriage
# return aside), lone surrogates, U+FFFE and U+FFFF. Generated requests are full of them.
_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _escape_char(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with each unprintable character as an escape (``\\x00``), safe in XML and HTML."""
    return _UNPRINTABLE.sub(_escape_char, text)


def rerun_command(report: Report, failure: Failure) -> str:
    """The command that runs again the check that found ``failure``, with the run's seed.

    A failure an observer found on another check's request reruns both checks.
    """
    from conformance.checks import REGISTRY

    parts = ["conformance", "run"]
    if report.options:
        parts += report.options
    elif report.mock:
        parts.append("--mock")
    else:
        parts += ["--base-url", shlex.quote(report.base_url), "--api-key", '"$API_KEY"']
        check = REGISTRY.get(failure.check)
        if check is not None and check.needs_second_key:
            parts += ["--second-key", '"$SECOND_API_KEY"']
    if report.allow_spend and not report.mock and not report.options:
        parts.append("--allow-spend")
    sender = failure.exchange.check if failure.exchange is not None else None
    only = [failure.check] + ([sender] if sender and sender != failure.check else [])
    seed = failure.seed if failure.seed is not None else report.seed
    parts += ["--profile", report.profile, "--only", *only, "--seed", str(seed)]
    return " ".join(parts)


def failure_text(failure: Failure, rerun: str | None = None) -> str:
    """A failure as plain text: the rule, the contract's words, the exchange, a curl, the seed."""
    subject = f" {failure.subject}:" if failure.subject else ""
    lines = [f"[{failure.check}/{failure.rule}]{subject} {failure.message}"]
    if failure.occurrences > 1:
        lines.append(f"  (seen {failure.occurrences} times)")
    if failure.quote:
        lines.append(f"  contract: {failure.quote}")
    if failure.exchange is not None:
        data = failure.exchange.to_dict(limit=1500)
        request, response = data["request"], data["response"]
        lines.append(f"  request:  {request['method']} {request['url']}")
        if request["body"]:
            lines.append(f"            {request['body'][:500]}")
        body = response["body"][:800] or "(empty body)"
        lines.append(f"  response: {response['status']} {body}")
        lines.append(f"  curl:     {data['curl']}")
    if "delivery" in failure.extra:
        lines.append(f"  delivery: {json.dumps(failure.extra['delivery'])[:1200]}")
    if "trace" in failure.extra:
        lines.append(str(failure.extra["trace"]))
    if steps := failure.extra.get("steps"):
        shrunk = "shortest sequence" if failure.extra.get("shrunk") else "sequence (not shrunk)"
        lines.append(f"  {shrunk}, {len(steps)} step(s):")
        lines.extend(f"    {step}" for step in steps)
    if rerun:
        lines.append(f"  rerun:    {rerun}")
    if failure.seed is not None:
        lines.append(f"  seed: {failure.seed}")
    return printable("\n".join(lines))


def failures_text(report: Report, failures: list[Failure]) -> str:
    """Failures as text, the first few of each rule in full and the rest counted."""
    blocks = []
    for group in group_failures(failures):
        blocks += [failure_text(f, rerun_command(report, f)) for f in group.shown]
        if group.more:
            blocks.append(f"… and {group.more} more like this ({group.check}/{group.rule})")
    return "\n\n".join(blocks)


def write_json(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8")


def junit(report: Report) -> ET.Element:
    """The run as JUnit XML: one test case per check (and one errored case when the run could
    not judge), rule coverage as properties and output, the gates as a suite of their own."""
    total = totals(report)
    suites = ET.Element("testsuites", name="conformance")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name="conformance",
        tests=str(total.checks + (1 if report.setup_problem else 0)),
        failures=str(total.checks_failed),
        skipped=str(total.checks_skipped),
        errors="1" if report.setup_problem else "0",
        time=f"{total.duration_seconds:.3f}",
        timestamp=report.started,
    )
    coverage = rule_coverage(report)
    properties = ET.SubElement(suite, "properties")
    for name, value in [*total.to_dict().items(), *coverage_properties(coverage).items()]:
        ET.SubElement(properties, "property", name=name, value=str(value))
    if report.setup_problem:  # one errored case: the run could not judge, nothing failed
        case = ET.SubElement(suite, "testcase", classname="conformance.setup", name="preflight")
        error = ET.SubElement(
            case, "error", message=f"setup problem: {report.setup_problem}", type="setup problem"
        )
        error.text = f"setup problem: {report.setup_problem}\n(no check was judged)"
        ET.SubElement(case, "system-out").text = "\n".join(report.notes)
    for result in report.checks:
        _junit_case(suite, report, result)
    ET.SubElement(suite, "system-out").text = coverage_text(coverage)
    checked = gates(report, coverage)
    if checked:
        _junit_gates(suites, report, checked)
    return suites


def _junit_case(suite: ET.Element, report: Report, result: CheckResult) -> None:
    """One check's test case: failed (its first failures), skipped (why), or passed; its
    counts, skips and warnings as its output."""
    case = ET.SubElement(
        suite, "testcase", classname=f"conformance.{result.family}", name=result.name
    )
    if result.status == "failed":
        element = ET.SubElement(
            case,
            "failure",
            message=f"{result.failed} failure(s): "
            + "; ".join(f.message for f in result.failures[:3])[:500],
            type=result.failures[0].rule,
        )
        element.text = failures_text(report, result.failures)
    elif result.status == "skipped":
        ET.SubElement(case, "skipped", message=result.skip_summary() or "not run")
    out = [f"requests={result.requests} judgements passed={result.passed} failed={result.failed}"]
    if result.skipped:
        out.append(f"skipped: {result.skip_summary()}")
    out += [
        f"warning: {g.example}" + (f" (×{g.count})" if g.count > 1 else "")
        for g in group_warnings(result.warnings)
    ]
    ET.SubElement(case, "system-out").text = "\n".join(out)


def _junit_gates(suites: ET.Element, report: Report, checked: list[Gate]) -> None:
    """The run's gates (``--min-...`` options) as a suite of their own: an unmet gate fails."""
    unmet = [gate for gate in checked if not gate.met]
    gate_suite = ET.SubElement(
        suites,
        "testsuite",
        name="conformance-gates",
        tests=str(len(checked)),
        failures=str(len(unmet)),
        skipped="0",
        errors="0",
        time="0.000",
        timestamp=report.started,
    )
    for gate in checked:
        case = ET.SubElement(
            gate_suite, "testcase", classname="conformance.gates", name=gate.option
        )
        if not gate.met:
            element = ET.SubElement(case, "failure", message=gate.detail, type="gate")
            element.text = f"{gate.option}: {gate.detail}"
        ET.SubElement(case, "system-out").text = gate.detail


def coverage_properties(coverage: Coverage) -> dict[str, object]:
    """The rule coverage as JUnit properties."""
    found: dict[str, object] = {
        "rulesStated": coverage.stated,
        "rulesJudgeable": coverage.judgeable,
        "rulesJudged": coverage.judged,
        "rulesPercent": coverage.percent,
        "rulesNotJudged": len(coverage.not_judged),
    }
    for category, count in coverage.by_category().items():
        found[f"rulesNotJudged.{category}"] = count
    return found


def coverage_text(coverage: Coverage) -> str:
    """The rule coverage as text: the headline, each family, then every rule not judged grouped
    by its reason."""
    lines = [coverage.headline(), ""]
    lines += [
        f"{name}: {family.judged} of {family.judgeable} judged"
        for name, family in coverage.families.items()
    ]
    for category, reason, entries in coverage.by_reason():
        lines += ["", f"not judged [{category}] {reason} ({len(entries)}):"]
        lines += [f"  - ({entry.rule.section}) {entry.rule.text}" for entry in entries]
    return "\n".join(lines)


def write_junit(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    root = junit(report)
    for element in root.iter():
        if element.text:
            element.text = printable(element.text)
        for name, value in element.attrib.items():
            element.set(name, printable(value))
    tree = ET.ElementTree(root)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def html_page(report: Report) -> str:
    from conformance.htmlreport import page

    return page(report)


def write_html(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_page(report), encoding="utf-8")
