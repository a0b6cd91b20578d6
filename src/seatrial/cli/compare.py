"""``seatrial compare RUN... [--json PATH] [--out DIR]``: run folders side by side in verdict words."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seatrial.cli.common import console, emit_json, out
from seatrial.cli.progress import rich_table


def compare(
    runs: Annotated[list[str], typer.Argument(help="Run folders (bench, accept, experiment), or NAME=PATH")],
    threshold: Annotated[float, typer.Option("--threshold-pct", help="Smallest change that counts, %")] = 5.0,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the comparison JSON here")] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Folder for summary.json and report.html")
    ] = None,
) -> None:
    """Compare runs per workload and level (IMPROVED / REGRESSED / NO_EFFECT / INCONCLUSIVE); with two
    deployments named (NAME=PATH), seed 001's per-phase table and the prefill gap split."""
    from seatrial.experiment.compare import compare as run_compare
    from seatrial.report.html import write_report
    from seatrial.runs import RunFolder
    from seatrial.runs.comparisons import comparison_table, deployment_table, split_table

    summary = run_compare(runs, threshold)
    out.print(rich_table(comparison_table(summary)))
    for table in (deployment_table(summary), split_table(summary)):
        if table is not None:
            out.print(rich_table(table))
    emit_json(json_path, summary)
    if out_dir is not None:
        with RunFolder(
            out_dir, "compare", {"runs": runs, "threshold_pct": threshold}, requests=False
        ) as folder:
            folder.write_summary(summary)
        console.print(f"report: {write_report(out_dir)}", highlight=False)


def register(app: typer.Typer) -> None:
    app.command()(compare)
