"""``seatrial experiment PLAN.yaml``: settings over fresh server starts, decided with intervals."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from seatrial.cli.common import console, emit_json, escape, json_target, out, out_folder_to_resume
from seatrial.cli.options import names_of, with_settings
from seatrial.cli.progress import rich_table
from seatrial.errors import EngineError, config_errors


def experiment(
    plan_path: Annotated[Path, typer.Argument(help="The plan (YAML)", metavar="PLAN.yaml", exists=True)],
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", parser=out_folder_to_resume, help="Folder (default runs/experiment-<time>)"),
    ] = None,
    json_path: Annotated[
        Path | None, typer.Option("--json", parser=json_target, help="Write the summary JSON here")
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue an interrupted plan in --out")] = False,
    resume_anyway: Annotated[
        bool,
        typer.Option(
            "--resume-anyway",
            help="Continue it also where host, GPUs, engine, environment or named files changed (recorded)",
        ),
    ] = False,
    **clients: Any,
) -> None:
    """Run a plan: each setting over fresh server starts, measured as bench measures, then ADOPT /
    REJECT / NO_EFFECT / INCONCLUSIVE per treatment and profile, or INVALID for every decision of a
    profile whose A/A check failed. Exit 0 when the plan ran, 1 when a profile is INVALID, 2 for an
    invalid plan (or a --resume under changed conditions), 5 when no start of some setting came up."""
    from seatrial.experiment import load_plan, run_experiment
    from seatrial.experiment.plan import ExperimentPlan
    from seatrial.load.settings import BenchSettings
    from seatrial.report.html import write_report
    from seatrial.runs.decisions import decision_table

    experiment = load_plan(plan_path)
    over = {k: v for k, v in clients.items() if v is not None}  # the flags given, over the experiment plan's
    if over:
        with config_errors():
            workload = BenchSettings.model_validate(experiment.workload.model_dump() | over)
            experiment = ExperimentPlan.model_validate(experiment.model_dump() | {"workload": workload})
    target = out_dir or Path("runs") / time.strftime("experiment-%Y%m%d-%H%M%S")
    summary = run_experiment(
        experiment,
        target,
        log=lambda m: console.print(escape(m), highlight=False),
        resume=resume,
        resume_anyway=resume_anyway,
    )
    write_report(target)
    out.print(rich_table(decision_table(summary.decisions)))
    console.print(f"report: {target / 'report.html'}", highlight=False)
    emit_json(json_path, summary)
    if summary.failed_settings:
        raise EngineError(f"no start of {', '.join(summary.failed_settings)} came up; see their server logs")
    invalid = sorted({d.profile for d in summary.decisions if d.verdict == "INVALID"})
    if invalid:
        checks = [c for c in summary.aa_checks if c["status"] in ("MOVED", "LEAVES_MIN_GAIN")]
        for c in checks:
            console.print(f"INVALID {c['profile']}: A/A check {c['check']} {c['reason']}", highlight=False)
        raise typer.Exit(1)


#: bench settings the command line may set over the experiment plan's workload (``plan`` here is bench's
#: ``--plan``, a memory plan whose KV capacity every start checks)
OVERRIDES = [*names_of("ClientSettings"), "otlp_listen", "plan"]


def register(app: typer.Typer) -> None:
    app.command("experiment")(with_settings(experiment, "BenchSettings", OVERRIDES, override=True))
