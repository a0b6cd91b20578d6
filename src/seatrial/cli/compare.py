"""``seatrial compare RUN... [--json PATH] [--out DIR]``: run folders side by side in verdict words."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seatrial.cli.common import console, emit_json, json_target, out, out_folder, write_folder
from seatrial.cli.progress import rich_table


def compare(
    runs: Annotated[list[str], typer.Argument(help="Run folders (bench, accept, experiment), or NAME=PATH")],
    threshold: Annotated[float, typer.Option("--threshold-pct", help="Smallest change that counts, %")] = 5.0,
    json_path: Annotated[Path | None, typer.Option("--json", parser=json_target, help="Write the comparison JSON here")] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", parser=out_folder, help="Folder for summary.json and report.html")
    ] = None,
) -> None:
    """Compare runs per workload and level (IMPROVED / REGRESSED / NO_EFFECT / INCONCLUSIVE); with
    deployments named (NAME=PATH), seed 001's per-phase table with intervals (two deployments), each factor
    apart (four named PRECISION@TOPOLOGY), and their capacities at the SLO, per GPU and per dollar."""
    from seatrial.compare.runs import compare as run_compare
    from seatrial.runs.comparisons import capacity_table, comparison_table, deployment_table, split_table

    summary = run_compare(runs, threshold)
    if summary.comparisons:
        out.print(rich_table(comparison_table(summary)))
    for table in (deployment_table(summary), split_table(summary), capacity_table(summary)):
        if table is not None:
            out.print(rich_table(table))
    if summary.deployment is not None and summary.deployment.confounded is not None:
        console.print(f"[yellow]note[/] {summary.deployment.confounded}", highlight=False)
    emit_json(json_path, summary)
    write_folder(out_dir, "compare", {"runs": runs, "threshold_pct": threshold}, summary)


def register(app: typer.Typer) -> None:
    app.command()(compare)
