"""``seatrial demo``: the whole pipeline against a local vLLM on CPU, ending in a report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from seatrial.cli.common import console, emit_json, escape, json_target, out, out_folder


def demo(
    out_dir: Annotated[
        Path | None, typer.Option("--out", parser=out_folder, help="Run folder (default runs/demo-<time>)")
    ] = None,
    json_path: Annotated[Path | None, typer.Option("--json", parser=json_target, help="Write the demo summary JSON here")] = None,
) -> None:
    """Start vLLM-CPU on a tiny generated model, run every capability against it, write report.html."""
    target = out_dir or Path("runs") / time.strftime("demo-%Y%m%d-%H%M%S")
    from seatrial.demo import run_demo

    summary = run_demo(target, log=lambda m: console.print(m, highlight=False))
    for s in summary["steps"]:
        out.print(f"{s['name']:<10} {step_line(s)}  ({s['seconds']} s)", highlight=False)
    out.print(f"report: {target / 'report.html'}")
    emit_json(json_path, summary)
    if not all(s["ok"] for s in summary["steps"]):
        raise typer.Exit(1)


def step_line(step: dict[str, Any]) -> str:
    """``ran``, or the verdict counts of a step that judges trials, or why it did not run."""
    if not step["ok"]:
        return f"[red]FAILED[/] {escape(step['error'] or '')}"
    if step.get("verdicts") is not None:
        mark = "[green]passed[/]" if step["passed"] else "[yellow]not passed[/]"
        from seatrial.runs import counts_line

        return f"{mark}: {counts_line(step['verdicts'])}"
    if step.get("valid_levels"):
        return f"ran: {step['valid_levels']} levels valid"
    if step.get("decisions"):
        return f"ran: {escape(step['decisions'])}"
    if "verified" in step:
        return "[green]verified identical[/]" if step["verified"] else "[red]differs[/]"
    return "ran"


def register(app: typer.Typer) -> None:
    app.command()(demo)
