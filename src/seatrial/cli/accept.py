"""``seatrial accept``: Stage 3a serving trials that end in verdicts with evidence."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from seatrial.cli.common import console, emit_json, out, parse_name_list, verdict_exit
from seatrial.cli.progress import LiveProgress
from seatrial.errors import ConfigError, RunInterrupted
from seatrial.runs import counts_line
from seatrial.trials import run_accept

STYLE = {"PASS": "green", "FAIL": "red", "UNSUPPORTED": "dim", "UNAVAILABLE": "dim"}


def _v(word: str | None) -> str:
    return "-" if word is None else f"[{STYLE.get(word, 'yellow')}]{word}[/]"


def verdict_table(trials: list[dict[str, Any]]) -> Table:
    table = Table(title="seatrial accept", header_style="bold")
    for col in ("trial", "verdict", "functional", "performance", "class", "samples", "why"):
        table.add_column(col, justify="left")
    for t in trials:
        samples = ", ".join(f"{k}={v}" for k, v in t.get("samples", {}).items())
        table.add_row(
            t["name"],
            _v(t["verdict"]),
            _v(t.get("functional")),
            t.get("performance") or "-",
            t.get("classification") or "-",
            samples,
            "; ".join(t.get("reasons", [])),
        )
    return table


def accept(
    url: Annotated[str, typer.Option(help="Server base URL, e.g. http://127.0.0.1:8000")],
    model: Annotated[str | None, typer.Option(help="Model name; default: the server's first model")] = None,
    tokenizer: Annotated[Path | None, typer.Option(help="Local tokenizer.json or its folder")] = None,
    profile: Annotated[Path | None, typer.Option(help="Profile YAML; default: the shipped profile")] = None,
    trials: Annotated[
        str | None, typer.Option(help="Subset, e.g. saturation,prefix-cache (default: the profile's)")
    ] = None,
    scale: Annotated[str, typer.Option(help="small (CPU server) or full")] = "full",
    require: Annotated[
        str | None,
        typer.Option(help="Trials that must be measured: UNAVAILABLE/UNSUPPORTED there fails the run"),
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Prompt seed; default: a new one per run, recorded in run.json")
    ] = None,
    workers: Annotated[int, typer.Option(help="Client processes sharing each measured level")] = 1,
    ray: Annotated[
        str | None, typer.Option(help="Ray cluster address: --clients actors share each level")
    ] = None,
    clients: Annotated[int, typer.Option(help="Ray client actors (with --ray)")] = 2,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Run folder")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the summary JSON here")] = None,
) -> None:
    """Run the acceptance trials; exit 0 only when the run passed (a PASS and no failed verdict),
    1 on a failed verdict, 8 when nothing could be measured."""
    if scale not in ("small", "full"):
        raise ConfigError(f"--scale must be small or full, got {scale!r}")
    try:
        with LiveProgress() as progress:
            summary = run_accept(
                url,
                model=model,
                tokenizer=tokenizer,
                profile=profile,
                trials=parse_name_list(trials) or None,
                scale="small" if scale == "small" else "full",
                out_dir=out_dir,
                progress=progress,
                require=parse_name_list(require),
                seed=seed,
                clients={"workers": workers, "ray": ray, "clients": clients},
            )
    except KeyboardInterrupt:
        where = f"; partial run folder: {out_dir}" if out_dir else ""
        raise RunInterrupted(f"interrupted{where}") from None
    out.print(verdict_table(summary["trials"]))
    if out_dir:
        console.print(f"report: {out_dir / 'report.html'}", highlight=False)
    console.print(f"passed: {summary['passed']} ({counts_line(summary['counts'])})", highlight=False)
    emit_json(json_path, summary)
    verdict_exit(summary["trials"], parse_name_list(require))


def register(app: typer.Typer) -> None:
    app.command()(accept)
