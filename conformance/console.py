"""What a run shows on the terminal: a progress bar while it runs; at the end each failure with
its request, response, the contract's words, a curl command and the command that reruns it (the
first few of each rule; the rest counted), a summary table that fits 80 columns, warnings grouped
by kind, and the run's totals.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from conformance.checks import Check
from conformance.reports import failure_text, rerun_command
from conformance.results import (
    SETUP_PROBLEM,
    Report,
    Totals,
    group_failures,
    group_warnings,
    totals,
)

_STYLES = {"passed": "green", "failed": "bold red", "skipped": "dim"}
SHOWN_ON_TERMINAL = 3  # failures of one rule printed in full; the reports hold more
_VERDICTS = {"passed": "passed", "failed": "FAILED", "skipped": "skipped"}


class ProgressDisplay:
    """A rich progress bar over the checks that run, with the request count."""

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

    def __enter__(self) -> ProgressDisplay:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def __call__(self, event: str, payload: Any) -> None:
        if event == "exchange":
            self.requests += 1
            self.progress.update(self.task, requests=self.requests)
        elif event == "check-start":
            self.progress.update(self.task, description=escape(payload.name))
        elif event == "check-end":
            self.progress.advance(self.task)


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
    for result in report.checks:
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
    console.print(totals_line(totals(report)))


def totals_line(total: Totals) -> str:
    """The run's totals in one line (rich markup)."""
    verdict = {
        "passed": "[green]PASSED[/]",
        "failed": "[bold red]FAILED[/]",
        SETUP_PROBLEM: "[bold yellow]SETUP PROBLEM[/] (nothing judged)",
    }.get(total.verdict, "[yellow]NOTHING JUDGED[/] (every check was skipped)")
    return (
        f"{verdict}: checks {total.checks_passed} passed, {total.checks_failed} failed, "
        f"{total.checks_skipped} skipped; {total.requests} requests made; "
        f"{total.judgements} judgements ({total.judgements_passed} passed, "
        f"{total.judgements_failed} failed); {total.duration_seconds:.1f} s; "
        f"{total.profile} profile; seed {total.seed} (rerun with --seed {total.seed})"
    )
