"""Live console progress for load runs (rich), and the end-of-run level table."""

from __future__ import annotations

import time
from typing import Any

from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table as RichTable
from rich.text import Text

from seatrial.cli.common import console
from seatrial.load.records import RequestRecord
from seatrial.runs.levels import engine_table, level_notes, level_table
from seatrial.runs.table import Table


class LiveProgress:
    """One bar per level: done/total, output tok/s so far, errors."""

    def __init__(self) -> None:
        self._bar = Progress(
            TextColumn("[bold]{task.description:<22}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tok_s]:>9} tok/s"),
            TextColumn("errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            console=console,
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

    def level_end(self, summary: dict[str, Any]) -> None:
        if not console.is_terminal:
            console.print(
                f"level C={summary['concurrency']}: {summary['requests_ok']} ok, {summary['requests_failed']} failed",
                highlight=False,
            )
        if not summary["valid"]:
            for reason in summary["invalid_reasons"]:
                console.print(f"  [red]INVALID[/] {escape(reason)}", highlight=False)


def rich_table(table: Table) -> RichTable:
    """A :class:`seatrial.runs.table.Table` for the console; rows not ok are red."""
    out = RichTable(title=table.title, title_justify="left", header_style="bold")
    for i, col in enumerate(table.columns):
        out.add_column(col, justify="left" if i == 0 or col == "valid" else "right")
    for row, ok in zip(table.rows, table.ok, strict=True):
        out.add_row(*(Text(c) for c in row), style=None if ok else "red")
    return out


def levels_table(levels: list[dict[str, Any]]) -> RichTable:
    return rich_table(level_table(levels))


def engine_view_table(levels: list[dict[str, Any]]) -> RichTable | None:
    table = engine_table(levels)
    return None if table is None else rich_table(table)


def print_level_notes(levels: list[dict[str, Any]]) -> None:
    for line in level_notes(levels):
        console.print(f"[yellow]note[/] {escape(line)}", highlight=False)
