"""Reports of a run: JUnit XML (one test case per check), JSON, and one self-contained HTML page."""

from __future__ import annotations

import html
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from conformance.results import CheckResult, Failure, Report


def failure_text(failure: Failure) -> str:
    """A failure as plain text: the rule, the contract's words, the exchange, a curl, the seed."""
    lines = [f"[{failure.check}/{failure.rule}] {failure.subject}: {failure.message}"]
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
        lines.append(f"  response: {response['status']} {response['body'][:800]}")
        lines.append(f"  reproduce: {data['curl']}")
    if "delivery" in failure.extra:
        lines.append(f"  delivery: {json.dumps(failure.extra['delivery'])[:1200]}")
    if "trace" in failure.extra:
        lines.append(str(failure.extra["trace"]))
    lines.append(f"  seed: {failure.seed}")
    return "\n".join(lines)


def write_json(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False), encoding="utf-8")


def junit(report: Report) -> ET.Element:
    suites = ET.Element("testsuites", name="conformance")
    suite = ET.SubElement(
        suites,
        "testsuite",
        name="conformance",
        tests=str(len(report.checks)),
        failures=str(sum(1 for c in report.checks if c.status == "failed")),
        skipped=str(sum(1 for c in report.checks if c.status == "skipped")),
        errors="0",
        time=f"{report.duration:.3f}",
        timestamp=report.started,
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("target", report.base_url),
        ("profile", report.profile),
        ("seed", str(report.seed)),
        ("requests", str(report.requests)),
    ):
        ET.SubElement(properties, "property", name=name, value=value)
    for result in report.checks:
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
            element.text = "\n\n".join(failure_text(f) for f in result.failures)
        elif result.status == "skipped":
            ET.SubElement(case, "skipped", message=result.skip_summary() or "not run")
        out = [f"requests={result.requests} passed={result.passed} failed={result.failed}"]
        if result.skipped:
            out.append(f"skipped: {result.skip_summary()}")
        out += [f"warning: {w.message}" for w in result.warnings]
        ET.SubElement(case, "system-out").text = "\n".join(out)
    return suites


def write_junit(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = ET.ElementTree(junit(report))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
table{border-collapse:collapse;margin:1rem 0}
td,th{border:1px solid #ccc;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#f3f3f3}.passed{color:#1a7f37}.failed{color:#cf222e;font-weight:bold}
.skipped{color:#777}pre{background:#f6f8fa;padding:.6rem;overflow-x:auto;white-space:pre-wrap}
section.failure{border-left:4px solid #cf222e;padding-left:1rem;margin:1.5rem 0}
"""


def _row(result: CheckResult) -> str:
    cells = [
        html.escape(result.name),
        f'<span class="{result.status}">{result.status}</span>',
        str(result.requests),
        str(result.judgements),
        str(result.failed),
        html.escape(result.skip_summary()),
        html.escape(result.description),
    ]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def _block(title: str, text: str) -> str:
    return f"<h4>{title}</h4><pre>{html.escape(text)}</pre>"


def _failure(failure: Failure) -> str:
    parts = [
        f"<h3>{html.escape(failure.check)} / {html.escape(failure.rule)}: "
        f"{html.escape(failure.subject)}</h3>",
        f"<p>{html.escape(failure.message)}</p>",
    ]
    if failure.quote:
        parts.append(f"<blockquote>{html.escape(failure.quote)}</blockquote>")
    if failure.exchange is not None:
        data = failure.exchange.to_dict()
        parts.append(_block("Request", json.dumps(data["request"], indent=2)))
        parts.append(_block("Response", json.dumps(data["response"], indent=2)))
        parts.append(_block("Reproduce", data["curl"]))
    if "delivery" in failure.extra:
        parts.append(_block("Delivery", json.dumps(failure.extra["delivery"], indent=2)))
    parts.append(f"<p>seed {failure.seed}; seen {failure.occurrences} time(s)</p>")
    return '<section class="failure">' + "".join(parts) + "</section>"


def html_page(report: Report) -> str:
    verdict = report.verdict.upper()
    head = ["check", "status", "requests", "judgements", "failed", "skipped (why)", "rule"]
    warnings = "".join(
        f"<li>{html.escape(w.check)}: {html.escape(w.message)}</li>" for w in report.warnings
    )
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in report.notes)
    return (
        "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
        f"<title>Conformance report: {verdict}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Conformance report: {verdict}</h1>"
        f"<p>Target {html.escape(report.base_url)}; profile {report.profile}; seed {report.seed}; "
        f"{report.requests} requests; started {report.started}; {report.duration:.1f} s.</p>"
        "<table id=checks><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(_row(r) for r in report.checks)
        + "</tbody></table>"
        + (f"<h2>Warnings</h2><ul>{warnings}</ul>" if warnings else "")
        + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
        + f"<h2>Failures ({len(report.failures)})</h2>"
        + "".join(_failure(f) for f in report.failures)
        + "</body></html>"
    )


def write_html(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_page(report), encoding="utf-8")
