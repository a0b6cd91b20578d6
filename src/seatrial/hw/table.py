"""The console verdict sheet of ``seatrial hw`` (rows from :func:`seatrial.runs.hwsheet.sheet_table`)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table
from rich.text import Text

from seatrial.hw.models import HwReport
from seatrial.runs.hwsheet import sheet_table

VERDICT_STYLES = {
    "PASS": "green",
    "FAIL": "bold red",
    "UNSUPPORTED": "yellow",
    "UNAVAILABLE": "dim",
    "REVIEW_REQUIRED": "magenta",
    "INCONCLUSIVE": "magenta",
    "UNSTABLE": "magenta",
}


def build_table(report: HwReport) -> Table:
    sheet = sheet_table(report.trials)
    table = Table(title=sheet.title, show_lines=False)
    for column in sheet.columns:
        table.add_column(column, overflow="fold")
    for name, gpu, verdict, detail in sheet.rows:
        # Text, not markup: evidence and reasons hold brackets ("pip install 'seatrial[gpu]'")
        table.add_row(
            Text(name), Text(gpu), Text(verdict, style=VERDICT_STYLES.get(verdict, "")), Text(detail)
        )
    return table


def render_text(report: HwReport, width: int = 160) -> str:
    """The table as plain text (what ``seatrial hw`` prints), for evidence files."""
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(build_table(report))
    return console.export_text()
