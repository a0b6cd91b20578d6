"""Live console progress for load runs (rich), and the end-of-run level table.

Every command's module imports this one at ``--help``: the level tables' layer (``runs.levels`` and the
summary models, about 0.1 s) and rich (about 50 ms) are imported where they are used, not here."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seatrial.cli.common import console, escape, partial_on_interrupt

if TYPE_CHECKING:
    from rich.table import Table as RichTable

    from seatrial.load.records import RequestRecord
    from seatrial.runs.folder import RunFolder
    from seatrial.runs.summaries.bench import LevelSummary, PlanCheck, SpanCounts
    from seatrial.runs.table import Table


class LiveProgress:
    """One bar per level: done/total, output tok/s so far, errors."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            TextColumn("[bold]{task.description:<22}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tok_s]:>9} tok/s"),
            TextColumn("errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            console=console.get(),
            transient=False,
            refresh_per_second=2,
            # No live bar (and no refresh thread competing with the load loop for the GIL) when
            # stderr is not a terminal; each level's result is printed when it ends instead.
            disable=not console.is_terminal,
        )
        self._task: Any = None
        self._t0 = time.perf_counter()
        self._tokens = 0
        self._errors = 0

    def __enter__(self) -> LiveProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def level_start(self, label: str, total: int) -> None:
        self._t0, self._tokens, self._errors = time.perf_counter(), 0, 0
        self._task = self._bar.add_task(label, total=total, tok_s="-", errors=0)

    def record(self, rec: RequestRecord) -> None:
        self._tokens += rec.output_tokens or 0
        self._errors += 0 if rec.ok else 1
        rate = self._tokens / max(1e-9, time.perf_counter() - self._t0)
        self._bar.update(self._task, advance=1, tok_s=f"{rate:,.1f}", errors=self._errors)

    def level_end(self, summary: LevelSummary) -> None:
        if not console.is_terminal:
            console.print(
                f"level {summary.label}: {summary.requests_ok} ok, {summary.requests_failed} failed",
                highlight=False,
            )
        if not summary.valid:
            for reason in summary.invalid_reasons:
                console.print(f"  [red]INVALID[/] {escape(reason)}", highlight=False)


VERDICT_STYLES = {
    "PASS": "green",
    "FAIL": "bold red",
    "UNSUPPORTED": "yellow",
    "UNAVAILABLE": "dim",
    "REVIEW_REQUIRED": "magenta",
    "INCONCLUSIVE": "magenta",
    "UNSTABLE": "magenta",
}


def verdict_sheet(table: Table) -> RichTable:
    """A table of verdicts (hw's sheet, accept's trials) for the console: cells as plain text (reasons hold
    brackets that rich markup would eat), each verdict word in its colour, long cells folded."""
    from rich.table import Table as RichTable
    from rich.text import Text

    out = RichTable(title=table.title, show_lines=False)
    for col in table.columns:
        out.add_column(col, overflow="fold")
    for row in table.rows:
        out.add_row(*(Text(c, style=VERDICT_STYLES.get(c, "")) for c in row))
    return out


def table_text(table: RichTable, width: int = 160) -> str:
    """A console table as plain text, as ``seatrial`` prints it (for evidence files such as table.txt)."""
    from rich.console import Console

    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(table)
    return console.export_text()


def rich_table(table: Table) -> RichTable:
    """A :class:`seatrial.runs.table.Table` for the console; rows not ok are red."""
    from rich.table import Table as RichTable
    from rich.text import Text

    out = RichTable(title=table.title, title_justify="left", header_style="bold")
    for i, col in enumerate(table.columns):
        out.add_column(col, justify="left" if i == 0 or col == "valid" else "right")
    for row, ok in zip(table.rows, table.ok, strict=True):
        out.add_row(*(Text(c) for c in row), style=None if ok else "red")
    return out


def levels_table(levels: list[LevelSummary]) -> RichTable:
    from seatrial.runs.levels import level_table

    return rich_table(level_table(levels))


def engine_view_table(levels: list[LevelSummary]) -> RichTable | None:
    from seatrial.runs.levels import engine_table

    table = engine_table(levels)
    return None if table is None else rich_table(table)


def server_timing_view(levels: list[LevelSummary]) -> RichTable | None:
    from seatrial.runs.levels import server_timing_table

    table = server_timing_table(levels)
    return None if table is None else rich_table(table)


def gpu_view(levels: list[LevelSummary]) -> RichTable | None:
    from seatrial.runs.levels import gpu_table

    table = gpu_table(levels)
    return None if table is None else rich_table(table)


def print_level_notes(levels: list[LevelSummary]) -> None:
    from seatrial.runs.levels import level_notes

    for line in level_notes(levels):
        console.print(f"[yellow]note[/] {escape(line)}", highlight=False)


@contextmanager
def running(
    out_dir: Path | None, command: str, config: dict[str, Any], *, requests: bool = True
) -> Iterator[tuple[RunFolder | None, LiveProgress]]:
    """One load run's life on the command line: its run folder (with ``--out``), live progress, Ctrl-C
    ended as RunInterrupted naming the partial folder (closed either way), and the report once the work is
    done."""
    from seatrial.runs.folder import RunFolder

    folder = RunFolder(out_dir, command, config, requests=requests) if out_dir else None
    with partial_on_interrupt(out_dir, folder):
        with LiveProgress() as progress:
            yield folder, progress
        if out_dir:
            from seatrial.report.html import write_report

            console.print(f"report: {write_report(out_dir)}", highlight=False)


def print_run_notes(notes: list[str], spans: SpanCounts | None, plan_check: PlanCheck | None) -> None:
    """A run's notes, what its engine spans joined, and its plan check, one console line each."""
    from seatrial.runs.levels import plan_check_line, span_lines

    for note in notes:
        console.print(f"[yellow]note[/] {escape(note)}", highlight=False)
    for line in span_lines(spans):
        console.print(f"[yellow]spans[/] {escape(line)}", highlight=False)
    if plan_check is not None:
        console.print(escape(plan_check_line(plan_check)), highlight=False)
