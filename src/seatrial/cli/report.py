"""``seatrial report DIR``: (re)render a run folder's report.html from its summary.json."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seatrial.cli.common import out
from seatrial.errors import ConfigError


def report(run_dir: Annotated[Path, typer.Argument(help="A run folder holding summary.json")]) -> None:
    """Write RUN_DIR/report.html: a self-contained page with tables and plots."""
    if not (run_dir / "summary.json").is_file():
        raise ConfigError(f"{run_dir}: no summary.json (is this a seatrial run folder?)")
    from seatrial.report.html import write_report

    out.print(f"wrote {write_report(run_dir)}")


def register(app: typer.Typer) -> None:
    app.command()(report)
