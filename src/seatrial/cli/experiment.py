"""``seatrial experiment PLAN.yaml``: settings over fresh server starts, decided with intervals."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from seatrial.cli.common import console, emit_json, out
from seatrial.cli.progress import rich_table
from seatrial.errors import EngineError


def experiment(
    plan_path: Annotated[Path, typer.Argument(help="The plan (YAML)", metavar="PLAN.yaml")],
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Folder (default runs/experiment-<time>)")
    ] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the summary JSON here")] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted plan in --out")] = False,
    workers: Annotated[
        int | None, typer.Option(help="Client processes sharing each level (over the plan's)")
    ] = None,
    ray: Annotated[
        str | None, typer.Option(help="Ray cluster address for the clients (over the plan's)")
    ] = None,
    clients: Annotated[int | None, typer.Option(help="Ray client actors (with --ray)")] = None,
) -> None:
    """Run a plan: each setting over fresh server starts, measured as bench measures, then ADOPT /
    REJECT / NO_EFFECT / INCONCLUSIVE per treatment and profile. Exit 0 when the plan ran, 2 for an
    invalid plan, 5 when no start of some setting came up."""
    from seatrial.experiment import load_plan, run_experiment
    from seatrial.report.html import write_report
    from seatrial.runs.decisions import decision_table

    plan = load_plan(plan_path)
    over = {k: v for k, v in {"workers": workers, "ray": ray, "clients": clients}.items() if v is not None}
    if over:
        plan = plan.model_copy(update={"workload": plan.workload.model_copy(update=over)})
    target = out_dir or Path("runs") / time.strftime("experiment-%Y%m%d-%H%M%S")
    summary = run_experiment(
        plan, target, log=lambda m: console.print(escape(m), highlight=False), resume=resume
    )
    write_report(target)
    out.print(rich_table(decision_table(summary["decisions"])))
    console.print(f"report: {target / 'report.html'}", highlight=False)
    emit_json(json_path, summary)
    if summary["failed_settings"]:
        raise EngineError(
            f"no start of {', '.join(summary['failed_settings'])} came up; see their server logs"
        )


def register(app: typer.Typer) -> None:
    app.command()(experiment)
