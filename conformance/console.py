"""What a run shows on the terminal: a progress bar while it runs; at the end the root causes
(one operation answering one error status to several checks), each failure with its request,
response, the contract's words, a curl command and the command that reruns it (the first few of
each rule; the rest counted), a summary table that fits 80 columns (failed checks first),
warnings grouped by kind, the rules not judged grouped by why, the CI gates, and the verdict
line: how many of the judgeable rules were judged, then the run's totals.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from conformance.checks import Check
from conformance.coverage import (
    CATEGORIES,
    NOT_REACHED,
    Coverage,
    Gate,
    gates,
    options_named,
    rule_coverage,
)
from conformance.progress import WAIT_SHOWN, waiting
from conformance.reports import failure_text, rerun_command
from conformance.results import (
    INSUFFICIENT_COVERAGE,
    SETUP_PROBLEM,
    Report,
    Totals,
    failed_first,
    group_failures,
    group_warnings,
    root_causes,
    totals,
)

_STYLES = {"passed": "green", "failed": "bold red", "skipped": "dim"}
SHOWN_ON_TERMINAL = 3  # failures of one rule printed in full; the reports hold more
ROOT_CAUSES_SHOWN = 5  # root causes printed; the reports hold every one
CHECKS_NAMED = 6  # checks named on a line of rules not judged; the reports name every one
_VERDICTS = {"passed": "passed", "failed": "FAILED", "skipped": "skipped"}


class ProgressDisplay:
    """A rich progress bar over the checks that run, with the request count; a wait longer
    than :data:`~conformance.progress.WAIT_SHOWN` seconds is shown in its description."""

    def __init__(self, console: Console, checks: list[Check]) -> None:
        self.console = console
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[requests]} requests"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        runnable = [c for c in checks if c.run is not None]
        self.task = self.progress.add_task("conformance", total=len(runnable), requests=0)
        self.requests = 0
        self.doing = "conformance"  # the description: the check that started last

    def __enter__(self) -> ProgressDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, event: str, payload: Any) -> None:
        if event in ("exchange", "requests"):  # a request ends a wait
            self.requests += 1 if event == "exchange" else payload.count
            self.progress.update(self.task, requests=self.requests, description=self.doing)
        elif event == "check-start":
            self.doing = escape(payload.name)
            self.progress.update(self.task, description=self.doing)
        elif event == "check-end":
            self.progress.advance(self.task)
        elif event == "wait" and payload.seconds > WAIT_SHOWN:
            self.progress.update(self.task, description=escape(waiting(payload)))


def summary_table(report: Report) -> tuple[Table, list[str]]:
    """The per-check table (it fits 80 columns: a check's name is never wrapped) and the skip
    reasons its ``skipped`` column refers to, numbered ``[1]``, ``[2]``..."""
    table = Table(
        title=f"Conformance of {report.base_url} ({report.profile} profile)",
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
        show_edge=False,
    )
    width = max((len(r.name) for r in report.checks), default=5)
    table.add_column("check", no_wrap=True, min_width=width)
    table.add_column("verdict", no_wrap=True)
    for column in ("judged\npassed", "judged\nfailed", "requests"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("skipped", no_wrap=True)
    reasons: dict[str, int] = {}
    for result in failed_first(report.checks):
        style = _STYLES[result.status]
        skipped = ""
        if result.skipped:
            number = reasons.setdefault(result.skip_summary(), len(reasons) + 1)
            skipped = f"[{number}]"
        table.add_row(
            f"[{style}]{escape(result.name)}[/]",
            f"[{style}]{_VERDICTS[result.status]}[/]",
            str(result.passed),
            f"[{style}]{result.failed}[/]" if result.failed else "0",
            str(result.requests),
            escape(skipped),
        )
    return table, list(reasons)


def print_report(console: Console, report: Report) -> None:
    causes = root_causes(report.failures)
    for cause in causes[:ROOT_CAUSES_SHOWN]:
        console.print("ROOT CAUSE", style="bold red", end=" ")
        console.print(cause.headline(), markup=False, highlight=False)
    if len(causes) > ROOT_CAUSES_SHOWN:
        console.print(
            f"[red]… and {len(causes) - ROOT_CAUSES_SHOWN} more root causes[/] (in "
            "--report-json and --report-html)"
        )
    if causes:
        console.print()
    for group in group_failures(report.failures, limit=SHOWN_ON_TERMINAL):
        for failure in group.shown:
            console.print("FAIL", style="bold red", end=" ")
            text = failure_text(failure, rerun_command(report, failure))
            console.print(text, markup=False, highlight=False)
            console.print()
        if group.more:
            console.print(
                f"[red]… and {group.more} more like this[/] ({escape(group.check)}/"
                f"{escape(group.rule)}; every one is in --report-json and --report-html)"
            )
            console.print()
    table, reasons = summary_table(report)
    console.print(table)
    for number, reason in enumerate(reasons, start=1):
        console.print(f"[dim]{escape(f'[{number}]')} skipped: {escape(reason)}[/]")
    for group in group_warnings(report.warnings):
        count = f" [dim](×{group.count})[/]" if group.count > 1 else ""
        console.print(f"[yellow]warning[/] {escape(group.check)}: {escape(group.example)}{count}")
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/]")
    coverage = rule_coverage(report)
    for line in not_judged_lines(coverage):
        console.print(line)
    checked = gates(report, coverage)
    for gate in checked:
        console.print(gate_line(gate))
    console.print(verdict_line(report.verdict, coverage))
    console.print(totals_line(totals(report)))


def not_judged_lines(coverage: Coverage) -> list[str]:
    """The rules not judged, grouped by why: one line per category naming the checks that could
    have judged them (with how many rules each), the full list left to the reports (markup)."""
    if not coverage.not_judged:
        return []
    lines = [
        f"[bold]Rules not judged: {len(coverage.not_judged)}[/] (each with its reason in "
        "--report-json and --report-html)"
    ]
    for category, count in coverage.by_category().items():
        entries = [n for n in coverage.not_judged if n.category == category]
        per_check = Counter(n.check for n in entries)
        named = per_check.most_common(CHECKS_NAMED)
        more = f" and {len(per_check) - len(named)} more" if len(per_check) > len(named) else ""
        label = f"  [yellow]{count}[/] {escape(CATEGORIES[category])}"
        if category == "needs-option":
            label += f" ({escape(', '.join(options_named(entries)))})"
        if category != "not-reached":
            checks = ", ".join(f"{name} ({n})" for name, n in named) + more
            lines.append(f"{label}: {escape(checks)}")
            continue
        # what each check was waiting for differs: one line each, with its own reason
        why = {n.check: n.reason.removeprefix(f"{n.check}: {NOT_REACHED}: ") for n in entries}
        lines.append(f"{label}:")
        lines += [f"    {escape(name)} ({n}): {escape(why[name])}" for name, n in named]
        if more:
            lines.append(f"   {escape(more)}")
    return lines
    return lines


def gate_line(gate: Gate) -> str:
    """One CI gate, met or not, with what was found (markup)."""
    if gate.met:
        return f"[green]gate met[/] {escape(gate.option)}: {escape(gate.detail)}"
    return f"[bold yellow]gate NOT met[/] {escape(gate.option)}: {escape(gate.detail)}"


_VERDICT_WORDS = {
    "passed": "[green]PASSED[/]",
    "failed": "[bold red]FAILED[/]",
    SETUP_PROBLEM: "[bold red]SETUP PROBLEM[/]",
    INSUFFICIENT_COVERAGE: "[bold yellow]INSUFFICIENT COVERAGE[/]",
}


def verdict_line(verdict: str, coverage: Coverage) -> str:
    """``PASSED: 148 of 236 judgeable rules judged (62.7%); 88 not judged: ...`` (markup)."""
    word = _VERDICT_WORDS.get(verdict, "[yellow]NOTHING JUDGED[/] (every check was skipped)")
    return f"{word}: {escape(coverage.headline())}"


def totals_line(total: Totals) -> str:
    """The run's totals in one line (rich markup)."""
    return (
        f"checks {total.checks_passed} passed, {total.checks_failed} failed, "
        f"{total.checks_skipped} skipped; {total.requests} requests made; "
        f"{total.judgements} judgements ({total.judgements_passed} passed, "
        f"{total.judgements_failed} failed); {total.duration_seconds:.1f} s; "
        f"{total.profile} profile; seed {total.seed} (rerun with --seed {total.seed})"
    )
