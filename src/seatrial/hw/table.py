"""The console verdict sheet of ``seatrial hw``."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from seatrial.hw.models import HwReport
from seatrial.hw.summary import summarize
from seatrial.verdict import Verdict

VERDICT_STYLES = {
    Verdict.PASS: "green",
    Verdict.FAIL: "bold red",
    Verdict.UNSUPPORTED: "yellow",
    Verdict.UNAVAILABLE: "dim",
    Verdict.REVIEW_REQUIRED: "magenta",
    Verdict.INCONCLUSIVE: "magenta",
    Verdict.UNSTABLE: "magenta",
}


def build_table(report: HwReport) -> Table:
    table = Table(title="seatrial hw", show_lines=False)
    for column in ("trial", "gpu", "verdict", "evidence / reason"):
        table.add_column(column, overflow="fold")
    for t in report.trials:
        detail = " | ".join(x for x in (summarize(t), t.reason or "") if x)
        style = VERDICT_STYLES.get(t.verdict, "")
        gpu = "all" if t.gpu is None else str(t.gpu)
        table.add_row(t.name, gpu, f"[{style}]{t.verdict.value}[/]", detail)
    return table


def render_text(report: HwReport, width: int = 160) -> str:
    """The table as plain text (what ``seatrial hw`` prints), for evidence files."""
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(build_table(report))
    return console.export_text()
