"""The HTML report: one self-contained page (no external assets, no script) that people read.

At the top, the rule coverage (how many of the judgeable rules were judged, per family, and the
CI gates) and the run's totals; then one row per check, failed checks first, a failed check
linking to its failures; warnings grouped by kind with counts; the root causes (one operation
answering one error status to several checks); each failure as one line (its rule and what was
expected against what came) that opens on a click (``<details>``) to the exchange, a curl command
and the command that reruns the check; and last every rule not judged, with why. Many failures
of one rule show the first few and count the rest, and bodies are pretty-printed and cut, so that
a run that fails everywhere stays small. The contract's words (quotes, rule texts) are Markdown,
rendered (raw HTML in them escaped, images left out: the page loads nothing).
"""

from __future__ import annotations

import html
import json
import re

from markdown_it import MarkdownIt

from conformance.coverage import CATEGORIES, Coverage, Gate, gates, rule_coverage
from conformance.outcomes import CheckResult, Failure
from conformance.reports import printable, rerun_command
from conformance.results import (
    FailureGroup,
    Report,
    RootCause,
    Totals,
    failed_first,
    group_failures,
    group_warnings,
    root_causes,
    totals,
)
from conformance.target import Exchange

BODY_LIMIT = 2048  # bytes of a body shown; the rest is counted
SUMMARY_LIMIT = 240  # characters of a failure's message on its one line

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5rem 2rem;color:#1f2328;max-width:80rem}
h1 .failed,h1 .passed,h1 .skipped{font-size:inherit}
table{border-collapse:collapse;margin:.8rem 0}
td,th{border:1px solid #d0d7de;padding:.25rem .55rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.n{text-align:right;font-variant-numeric:tabular-nums}
.passed{color:#1a7f37}.failed{color:#cf222e;font-weight:bold}.skipped{color:#6e7781}
dl.totals{display:flex;flex-wrap:wrap;gap:.4rem 1.6rem;margin:.8rem 0 1.2rem}
dl.totals div{min-width:7rem}dl.totals dt{font-size:.8rem;color:#57606a}
dl.totals dd{margin:0;font-size:1.15rem;font-weight:600;word-break:break-all}
section.check{border-left:4px solid #cf222e;padding-left:1rem;margin:1.6rem 0}
details{margin:.3rem 0;border:1px solid #d0d7de;border-radius:4px;padding:.2rem .5rem}
details[open]{background:#fcfcfd}summary{cursor:pointer}
summary code.rule{background:#ffebe9;color:#a40e26;padding:0 .3rem;border-radius:3px}
.subject{color:#57606a}.more{color:#57606a;font-style:italic;margin:.4rem 0 .8rem}
pre{background:#f6f8fa;padding:.5rem;overflow-x:auto;white-space:pre-wrap;word-break:break-all;
margin:.3rem 0}
h4{margin:.9rem 0 .2rem}h5{margin:.6rem 0 .1rem}blockquote{color:#57606a;margin:.3rem 1rem}
a.up{font-size:.8rem;font-weight:normal}
p.setup{border-left:4px solid #bf8700;background:#fff8c5;padding:.5rem 1rem}
td:first-child{white-space:nowrap}
section#coverage{border:1px solid #d0d7de;border-radius:6px;padding:.4rem 1rem;margin:.8rem 0}
p.headline{font-size:1.3rem;font-weight:600;margin:.4rem 0}
.bar{background:#eaeef2;width:12rem;height:.8rem;border-radius:3px;overflow:hidden}
.bar span{display:block;height:100%;background:#1a7f37}
ul.gates{padding-left:1.2rem}.met{color:#1a7f37}.unmet{color:#9a6700;font-weight:bold}
blockquote p{margin:.2rem 0}code{background:#f6f8fa;padding:0 .2rem;border-radius:3px}
"""

# The contract's words are Markdown: raw HTML in them is escaped, and images are left out so
# that the page never loads anything.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).disable("image")

_LABELS = {
    "verdict": "Verdict",
    "checksPassed": "Checks passed",
    "checksFailed": "Checks failed",
    "checksSkipped": "Checks skipped",
    "requests": "Requests made",
    "judgements": "Judgements made",
    "judgementsPassed": "Judgements passed",
    "judgementsFailed": "Judgements failed",
    "seed": "Seed",
    "durationSeconds": "Duration",
    "profile": "Profile",
    "target": "Target",
}


def page(report: Report) -> str:
    total = totals(report)
    coverage = rule_coverage(report)
    verdict = total.verdict.upper()
    failed = [r for r in report.checks if r.failures]
    return "".join(
        [
            "<!DOCTYPE html><html lang=en><head><meta charset=utf-8>",
            "<meta name=viewport content='width=device-width,initial-scale=1'>",
            f"<title>Conformance report: {escape(verdict)}</title>",
            f"<style>{_STYLE}</style></head><body>",
            f"<h1>Conformance report: <span class={_css(total.verdict)}>{escape(verdict)}</span>"
            "</h1>",
            _setup_problem(report),
            _coverage(coverage, gates(report, coverage)),
            _totals(total),
            f"<p class=subject>Started {escape(report.started or 'unknown')}"
            f"{'; allow-spend' if report.allow_spend else ''}"
            f"{f'; at most {report.max_requests} requests' if report.max_requests else ''}.</p>",
            _notes(report.notes),
            "<h2>Checks</h2>",
            _checks_table(report),
            _warnings(report),
            f"<h2 id=failures>Failures ({total.judgements_failed})</h2>" if failed else "",
            _root_causes(root_causes(report.failures)),
            *(_check_failures(report, r) for r in failed),
            _not_judged(coverage),
            "</body></html>",
        ]
    )


def _setup_problem(report: Report) -> str:
    if not report.setup_problem:
        return ""
    return (
        "<p class=setup id=setup-problem><strong>Setup problem</strong> (no check was judged; "
        f"this is not a conformance failure): {escape(report.setup_problem)}</p>"
    )


def _css(status: str) -> str:
    return {"passed": "passed", "failed": "failed"}.get(status, "skipped")


def _totals(total: Totals) -> str:
    items = []
    for key, value in total.to_dict().items():
        if key == "checks":
            continue
        shown = f"{value:.1f} s" if key == "durationSeconds" else str(value)
        items.append(
            f"<div><dt>{_LABELS.get(key, key)}</dt><dd data-total={key} "
            f"data-value='{attribute(value)}'>{escape(shown)}</dd></div>"
        )
    return "<dl class=totals id=totals>" + "".join(items) + "</dl>"


def _coverage(coverage: Coverage, checked: list[Gate]) -> str:
    """The headline: the figure, the CI gates, and a bar per family."""
    figure = (
        f"<p class=headline data-rules-judged={coverage.judged} "
        f"data-rules-judgeable={coverage.judgeable} data-rules-stated={coverage.stated} "
        f"data-rules-percent={coverage.percent}>{escape(coverage.headline())}</p>"
    )
    gate_items = "".join(
        f"<li class={'met' if g.met else 'unmet'}>{'met' if g.met else 'NOT met'}: "
        f"<code>{escape(g.option)}</code>: {escape(g.detail)}</li>"
        for g in checked
    )
    rows = []
    for name, family in coverage.families.items():
        share = 100 * family.judged / family.judgeable if family.judgeable else 0
        rows.append(
            f"<tr data-family='{attribute(name)}'><td>{escape(name)}</td>"
            f"<td class=n>{family.judged}</td><td class=n>{family.judgeable}</td>"
            f"<td><div class=bar title='{share:.0f}%'><span style='width:{share:.1f}%'>"
            "</span></div></td></tr>"
        )
    more = (
        f"<p class=subject>Of the {coverage.stated} stated rules of the interface document, "
        f"{coverage.judgeable} are judgeable against this target; "
        + (
            f"<a href='#not-judged'>{len(coverage.not_judged)} were not judged</a>, each listed "
            "with why."
            if coverage.not_judged
            else "every one was judged."
        )
        + " A rule counts as judged when one of its checks made a judgement; each counts for "
        "the family of its first check.</p>"
    )
    return (
        "<section id=coverage><h2>Rule coverage</h2>"
        + figure
        + (f"<ul class=gates id=gates>{gate_items}</ul>" if gate_items else "")
        + more
        + "<table id=families><thead><tr><th>family</th><th>rules judged</th>"
        "<th>judgeable</th><th></th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></section>"
    )


def _root_causes(causes: list[RootCause]) -> str:
    """Several checks failing on one operation's one error status, as one cause each."""
    if not causes:
        return ""
    items = []
    for cause in causes:
        links = ", ".join(
            f"<a href='#failures-{_anchor(name)}'>{escape(name)}</a>" for name in cause.checks
        )
        items.append(
            f"<li><b>{escape(cause.label)}</b> answered <b>{cause.status}</b> in "
            f"{len(cause.checks)} checks: {links} ({cause.occurrences} failure(s))</li>"
        )
    return f"<h3 id=root-causes>Root causes ({len(causes)})</h3><ul>{''.join(items)}</ul>"


def _not_judged(coverage: Coverage) -> str:
    """Every rule not judged, grouped by why, with its section, its checks and the reason."""
    if not coverage.not_judged:
        return ""
    parts = [f"<h2 id=not-judged>Rules not judged ({len(coverage.not_judged)})</h2>"]
    for category, count in coverage.by_category().items():
        rows = "".join(
            f"<tr data-category='{attribute(category)}'><td>{markdown_inline(n.rule.text)}</td>"
            f"<td>{escape(n.rule.section)}</td><td>{escape(', '.join(n.checks))}</td>"
            f"<td>{escape(n.reason)}</td></tr>"
            for n in coverage.not_judged
            if n.category == category
        )
        parts.append(
            f"<h3 id='not-judged-{category}'>{count} {escape(CATEGORIES[category])}</h3>"
            "<table class=not-judged><thead><tr><th>rule</th><th>section</th><th>checks</th>"
            f"<th>why not judged</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    return "".join(parts)


def _notes(notes: list[str]) -> str:
    if not notes:
        return ""
    return "<h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in notes) + "</ul>"


def _checks_table(report: Report) -> str:
    head = [
        "check",
        "verdict",
        "judgements passed",
        "judgements failed",
        "requests",
        "skipped (why)",
        "what it checks",
    ]
    rows = "".join(_check_row(r) for r in failed_first(report.checks))
    return (
        "<table id=checks><thead><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + f"</tr></thead><tbody>{rows}</tbody></table>"
    )


def _check_row(result: CheckResult) -> str:
    name = escape(result.name)
    if result.failures:
        name = f"<a href='#failures-{_anchor(result.name)}'>{name}</a>"
    cells = [
        f"<td>{name}",
        f"<td><span class={_css(result.status)}>{result.status}</span>",
        f"<td class=n>{result.passed}",
        f"<td class=n>{result.failed}",
        f"<td class=n>{result.requests}",
        f"<td>{escape(result.skip_summary())}",
        f"<td>{escape(result.description)}",
    ]
    return f"<tr id='check-{_anchor(result.name)}'>" + "</td>".join(cells) + "</td></tr>"


def _warnings(report: Report) -> str:
    groups = group_warnings(report.warnings)
    if not groups:
        return ""
    rows = []
    for group in groups:
        subjects, more = group.subjects()
        where = ", ".join(subjects) + (f" and {more} more" if more else "")
        examples = "<br>".join(escape(v) for v in group.variants())
        if len(group.warnings) > 3:
            examples += f"<br><span class=more>{len(group.warnings) - 3} more variants</span>"
        rows.append(
            f"<tr><td>{escape(group.check)}</td><td>{escape(group.kind)}</td>"
            f"<td class=n>{group.count}</td><td>{examples}</td><td>{escape(where)}</td></tr>"
        )
    count = sum(g.count for g in groups)
    return (
        f"<h2>Warnings ({count} in {len(groups)} kinds)</h2><table id=warnings><thead><tr>"
        "<th>check</th><th>kind</th><th>count</th><th>for example</th><th>where</th></tr>"
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _check_failures(report: Report, result: CheckResult) -> str:
    anchor = _anchor(result.name)
    groups = group_failures(result.failures)
    parts = [
        f"<section class=check id='failures-{anchor}'>",
        f"<h3>{escape(result.name)}: {result.failed} failed, {result.passed} passed "
        f"<a class=up href='#check-{anchor}'>↑ checks</a></h3>",
        f"<p class=subject>{escape(result.description)}</p>",
    ]
    for group in groups:
        parts.append(_group(report, group))
    parts.append("</section>")
    return "".join(parts)


def _group(report: Report, group: FailureGroup) -> str:
    anchor = f"{_anchor(group.check)}-{_anchor(group.rule)}"
    parts = [
        f"<h4 id='failures-{anchor}'>rule <code>{escape(group.rule)}</code>: "
        f"{group.occurrences} failure(s)</h4>"
    ]
    quotes = {f.quote for f in group.shown}
    common = len(quotes) == 1
    if common and group.failures[0].quote:
        parts.append(f"<blockquote>{markdown(group.failures[0].quote)}</blockquote>")
    for index, failure in enumerate(group.shown, start=1):
        parts.append(_failure(report, failure, f"{anchor}-{index}", show_quote=not common))
    if group.more:
        subjects, more = group.more_subjects()
        where = ", ".join(subjects) + (f" and {more} more" if more else "")
        parts.append(
            f"<p class=more>… and {group.more} more like this"
            + (f" (on {escape(where)})" if where else "")
            + "; all of them are in the JSON report (--report-json).</p>"
        )
    return "".join(parts)


def _failure(report: Report, failure: Failure, anchor: str, show_quote: bool = True) -> str:
    message = failure.message
    short = message if len(message) <= SUMMARY_LIMIT else message[: SUMMARY_LIMIT - 1] + "…"
    seen = f" <b>×{failure.occurrences}</b>" if failure.occurrences > 1 else ""
    subject = f"<span class=subject>{escape(failure.subject)}</span> " if failure.subject else ""
    parts = [
        f"<details id='failure-{anchor}'><summary><code class=rule>{escape(failure.rule)}"
        f"</code> {subject}{escape(short)}{seen}</summary>"
    ]
    if short != message:
        parts.append(f"<p>{escape(message)}</p>")
    if show_quote and failure.quote:
        parts.append(f"<blockquote>{markdown(failure.quote)}</blockquote>")
    if failure.exchange is not None:
        parts.append(_exchange(failure.exchange))
        parts.append(f"<h5>curl</h5><pre>{escape(failure.exchange.curl())}</pre>")
    if "delivery" in failure.extra:
        delivery = json.dumps(failure.extra["delivery"], indent=2, ensure_ascii=False)
        parts.append(f"<h5>Delivery</h5><pre>{escape(cut(delivery))}</pre>")
    if "trace" in failure.extra:
        parts.append(f"<h5>Trace</h5><pre>{escape(cut(str(failure.extra['trace'])))}</pre>")
    if steps := failure.extra.get("steps"):
        shrunk = "shortest sequence" if failure.extra.get("shrunk") else "sequence (not shrunk)"
        text = "\n".join(str(step) for step in steps)
        parts.append(f"<h5>The {shrunk}, {len(steps)} step(s)</h5><pre>{escape(cut(text))}</pre>")
    parts.append(f"<h5>Rerun the check</h5><pre>{escape(rerun_command(report, failure))}</pre>")
    parts.append("</details>")
    return "".join(parts)


def _exchange(exchange: Exchange) -> str:
    request_headers = "".join(
        f"\n{name}: {value}" for name, value in exchange.masked_request_headers().items()
    )
    response_headers = "".join(
        f"\n{name}: {value}" for name, value in exchange.response_headers.items()
    )
    request_body = pretty_body(_masked(exchange, exchange.request_body))
    response_body = pretty_body(_masked(exchange, exchange.response_body))
    return (
        f"<h5>Request</h5><pre>{escape(exchange.method)} "
        f"{escape(_masked(exchange, exchange.url))}{escape(request_headers)}"
        + (f"\n\n{escape(request_body)}" if request_body else "")
        + f"</pre><h5>Response</h5><pre>{exchange.status}{escape(response_headers)}\n\n"
        + (escape(response_body) if response_body else "(empty body)")
        + "</pre>"
    )


def pretty_body(raw: bytes | str, limit: int = BODY_LIMIT) -> str:
    """A body for people: JSON indented, anything else as text; cut after ``limit`` bytes with
    a note of how many more there were."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    if not text:
        return ""
    try:
        return cut(json.dumps(json.loads(text), indent=2, ensure_ascii=False), limit)
    except ValueError:
        return cut(text, limit)


def cut(text: str, limit: int = BODY_LIMIT) -> str:
    """``text`` cut to at most ``limit`` bytes (UTF-8), saying how many more bytes there were."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    shown = data[:limit].decode("utf-8", "ignore")
    return f"{shown}\n… {len(data) - len(shown.encode('utf-8'))} more bytes"


def _masked(exchange: Exchange, raw: bytes | str) -> str:
    """``raw`` as text with the run's API keys as ``${API_KEY}`` (before any cut)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    for secret, name in exchange.masks.items():
        if secret:
            text = text.replace(secret, name)
    return text


def markdown(text: str) -> str:
    """The contract's words (Markdown) as HTML blocks."""
    return _MARKDOWN.render(printable(text))


def markdown_inline(text: str) -> str:
    """The contract's words (Markdown) as HTML inside one element, such as a table cell."""
    return _MARKDOWN.renderInline(printable(text))


def escape(value: object) -> str:
    """``value`` as HTML text: unprintable characters as escapes, then ``<``, ``>``, ``&``."""
    return html.escape(printable(str(value)), quote=False)


def attribute(value: object) -> str:
    """``value`` for a quoted attribute."""
    return html.escape(printable(str(value)), quote=True)


def _anchor(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "x"
