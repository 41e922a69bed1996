"""The reports of a proxy session, written on exit: ``--report-json``, ``--junit-xml``,
``--report-html``.

JUnit and HTML are the suite's own formats (conformance/reports.py, conformance/htmlreport.py):
the session is turned into a :class:`~conformance.results.Report` whose checks are those the
traffic judged, each finding a failure of its check (its ``rule`` says the side), shown with
its exchange and a curl command. The JSON report is the proxy's own:

* ``findings``: each as ``{rule, side, operationId, requestId, message, quote, seenAt,
  exchange}`` (the exchange with its curl command; the first ``FINDINGS_KEPT`` are listed,
  every one is counted);
* ``totals``: findings by side (``client``, ``deployment``, and ``mock``: on answers the bundled
  mock gave under ``--fallback-mock``), by rule and side, and the exchanges that fell back
  (``fallbacks``);
* ``rules``: rule coverage: the stated rules (conformance/rules.yaml) the observed traffic
  judged, through the checks that judged at least once;
* ``checks``: per check, its judgements and its deployment findings;
* ``operations``: per operationId, its exchanges and findings by side (and, when the mock
  answered some, ``fallbacks`` and ``mock``);
* ``fallbacks``: what ``--fallback-mock`` did: per operation the exchanges the bundled mock
  answered and what the upstream had said (404 for the route, 501: an operation the deployment
  lacks; a note, not a finding), and the exchanges that could not fall back, with why;
* ``addedLatency``: what forwarding added to the upstream's own time (p50, p99), measured
  inside the proxy over its latest exchanges.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance import reports
from conformance.outcomes import CheckResult, Failure
from conformance.proxy.findings import MOCK, SIDES, Finding
from conformance.proxy.session import ProxySession
from conformance.results import Report
from conformance.rules import rules

PROXY_NOTE = (
    "judged passively by conformance proxy: only the rules the observed traffic showed; a rule "
    "judged only through requests of the suite's own (conformance run) counts as not selected"
)


def suite_report(session: ProxySession, upstream: str) -> Report:
    """The session as a suite report (for the JUnit and HTML formats)."""
    judge = session.judge
    grouped: dict[str, dict[tuple[str, str], Failure]] = defaultdict(dict)
    for finding in session.findings:
        key = (finding.side, finding.message)
        failures = grouped[finding.rule]
        if key in failures:
            failures[key].occurrences += 1
            continue
        failures[key] = Failure(
            check=finding.rule,
            rule=finding.side,
            message=finding.message,
            quote=finding.quote,
            subject=finding.operation_id or (finding.exchange.path if finding.exchange else ""),
            exchange=finding.exchange,
            extra={"requestId": finding.request_id} if finding.request_id else {},
        )
    names = list(judge.results) + [n for n in grouped if n not in judge.results]
    checks = []
    for name in names:
        known = judge.results.get(name)
        check = judge.checks.get(name)
        result = CheckResult(
            name,
            check.family if check else "webhooks",
            check.description if check else "",
            requests=known.requests if known else 0,
            passed=known.passed if known else 0,
            ran=True,
        )
        result.failures = list(grouped.get(name, {}).values())
        checks.append(result)
    return Report(
        base_url=upstream,
        profile=judge.contract.profile,
        seed=0,
        allow_spend=False,
        mock=False,
        checks=checks,
        requests=session.exchanges,
        notes=[PROXY_NOTE, session.summary(), *fallback_notes(session)],
        started=datetime.fromtimestamp(session.started, UTC).isoformat(),
        duration_seconds=max(0.0, datetime.now(UTC).timestamp() - session.started),
        options=["--base-url", upstream],
    )


def fallback_notes(session: ProxySession) -> list[str]:
    """The fallbacks in words, for the JUnit and HTML reports."""
    report = fallbacks(session)
    notes = []
    if report["total"]:
        answered = ", ".join(
            f"{op} ({', '.join(f'{n} after {status}' for status, n in seen['upstream'].items())})"
            for op, seen in report["operations"].items()
        )
        notes.append(
            f"--fallback-mock: {report['total']} exchanges answered by the bundled mock, for "
            f"operations the deployment lacks (the upstream said 404 for the route, or 501): "
            f"{answered}; findings on them are the mock's (side mock), not the deployment's"
        )
    for each in report["notFallenBack"]:
        notes.append(
            f"--fallback-mock: {each['exchanges']} exchange(s) of {each['operationId']} "
            f"(upstream said {each['upstreamStatus']}) not answered by the bundled mock: "
            f"{each['why']}"
        )
    return notes


def fallbacks(session: ProxySession) -> dict[str, Any]:
    """What ``--fallback-mock`` did, for the JSON report."""
    judge = session.judge
    operations: dict[str, dict[str, Any]] = {}
    for (op, status), n in sorted(judge.fallbacks.items()):
        seen = operations.setdefault(op, {"exchanges": 0, "upstream": {}})
        seen["exchanges"] += n
        seen["upstream"][str(status)] = n
    return {
        "total": judge.fell_back,
        "operations": operations,
        "notFallenBack": [
            {"operationId": op, "upstreamStatus": status, "why": why, "exchanges": n}
            for (op, status, why), n in sorted(judge.not_fallen_back.items())
        ],
    }


def rule_coverage(session: ProxySession) -> dict[str, Any]:
    """The stated rules the observed traffic judged (a rule is judged when one of the checks
    that judge it made a judgement), of those the proxy can judge at all."""
    judged_checks = {
        n for n, r in session.judge.results.items() if r.passed or session.judge.failed[n]
    }
    judged_checks |= {f.rule for f in session.findings if f.side != MOCK}
    stated = rules()
    proxy_checks = proxy_check_names(session)
    judgeable = [r for r in stated if set(r.judged_by) & proxy_checks]
    judged = [r for r in judgeable if set(r.judged_by) & judged_checks]
    return {
        "stated": len(stated),
        "judgeableByTraffic": len(judgeable),
        "judged": len(judged),
        "percent": round(100 * len(judged) / len(judgeable), 1) if judgeable else 0.0,
        "judgedRules": [
            {
                "section": r.section,
                "rule": r.text,
                "checks": sorted(set(r.judged_by) & judged_checks),
            }
            for r in judged
        ],
    }


def proxy_check_names(session: ProxySession) -> set[str]:
    """The checks the proxy judges traffic by."""
    names = {c.name for c in session.judge.observers}
    names |= {"schema-negative", "idempotency-key-required", "pagination-ordered-streams"}
    for sequence in session.judge.sequences:
        names |= set(sequence.checks)
    return names


def to_dict(session: ProxySession, upstream: str, exit_code: int | None = None) -> dict[str, Any]:
    judge = session.judge
    by_rule: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(SIDES, 0))
    for (rule, side), n in session.by_rule.items():
        by_rule[rule][side] = n
    return {
        "upstream": upstream,
        "profile": judge.contract.profile,
        "started": datetime.fromtimestamp(session.started, UTC).isoformat(),
        "durationSeconds": round(datetime.now(UTC).timestamp() - session.started, 3),
        "exchanges": session.exchanges,
        "addedLatency": session.added_latency(),
        "judged": judge.judged,
        "notJudged": dict(judge.not_judged)
        | ({"the judge fell behind (queue full)": session.unjudged} if session.unjudged else {}),
        "totals": {
            "findings": sum(session.counts.values()),
            **{side: session.counts[side] for side in (*SIDES, MOCK)},
            "fallbacks": judge.fell_back,
            "listed": len(session.findings),
            "byRule": dict(sorted(by_rule.items())),
        },
        "findings": [_finding(f) for f in session.findings],
        "rules": rule_coverage(session),
        "checks": {
            name: {"judgements": r.passed + judge.failed[name], "findings": judge.failed[name]}
            for name, r in sorted(judge.results.items())
        },
        "operations": {k: v.to_dict() for k, v in sorted(judge.operations.items())},
        "fallbacks": fallbacks(session),
        "exitCode": exit_code,
    }


def _finding(finding: Finding) -> dict[str, Any]:
    return finding.to_dict()


def write(
    session: ProxySession,
    upstream: str,
    *,
    report_json: Path | None = None,
    junit_xml: Path | None = None,
    report_html: Path | None = None,
    exit_code: int | None = None,
) -> None:
    if report_json is not None:
        text = json.dumps(to_dict(session, upstream, exit_code), ensure_ascii=False, indent=2)
        report_json.write_text(text + "\n", encoding="utf-8")
    if junit_xml is not None or report_html is not None:
        report = suite_report(session, upstream)
        if junit_xml is not None:
            reports.write_junit(report, junit_xml)
            _junit_fallbacks(junit_xml, session)
        if report_html is not None:
            reports.write_html(report, report_html)


def _junit_fallbacks(path: Path, session: ProxySession) -> None:
    """The fallbacks in the JUnit report: a ``fallbacks`` property of the suite, and their notes
    in its output (the suite's format keeps notes to its HTML)."""
    notes = fallback_notes(session)
    if not notes:
        return
    tree = ET.parse(path)
    suite = tree.getroot().find("testsuite")
    if suite is None:
        return
    properties = suite.find("properties")
    if properties is None:
        properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="fallbacks", value=str(session.judge.fell_back))
    out = suite.find("system-out")
    if out is None:
        out = ET.SubElement(suite, "system-out")
    out.text = "\n".join([*notes, out.text or ""]).rstrip("\n")
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
