"""What a run shows on the terminal: a progress bar while it runs, a summary table at the end,
and every failure with its request, response, the contract's words, a curl command and the seed.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from conformance.checks import Check
from conformance.reports import failure_text
from conformance.results import CheckResult, Report

_STYLES = {"passed": "green", "failed": "bold red", "skipped": "dim"}


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


def summary_table(report: Report) -> Table:
    table = Table(title=f"Conformance of {report.base_url} ({report.profile} profile)")
    for column in ("check", "requests", "judgements", "failed", "skipped (why)"):
        table.add_column(column, overflow="fold")
    for result in report.checks:
        style = _STYLES[result.status]
        table.add_row(
            f"[{style}]{escape(result.name)}[/]",
            str(result.requests),
            str(result.judgements),
            f"[{style}]{result.failed}[/]" if result.failed else "0",
            escape(_skips(result)),
        )
    return table


def _skips(result: CheckResult) -> str:
    return result.skip_summary()


def print_report(console: Console, report: Report) -> None:
    for failure in report.failures:
        console.print("FAIL", style="bold red", end=" ")
        console.print(failure_text(failure), markup=False, highlight=False)
        console.print()
    console.print(summary_table(report))
    for warning in report.warnings:
        console.print(
            f"[yellow]warning[/] {escape(warning.check)}: {escape(warning.message)}",
            soft_wrap=True,
        )
    for note in report.notes:
        console.print(f"[dim]note: {escape(note)}[/]", soft_wrap=True)
    verdict = {"passed": "[green]PASSED[/]", "failed": "[bold red]FAILED[/]"}.get(
        report.verdict, "[yellow]NOTHING JUDGED[/] (every check was skipped)"
    )
    counts = {s: sum(1 for c in report.checks if c.status == s) for s in _STYLES}
    judgements = sum(c.judgements for c in report.checks)
    console.print(
        f"{verdict}: checks {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['skipped']} skipped; {report.requests} requests made, {judgements} "
        f"judgements; seed {report.seed} (rerun with --seed {report.seed})",
        soft_wrap=True,
    )
