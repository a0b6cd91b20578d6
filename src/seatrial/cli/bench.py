"""``seatrial bench``: measure a running OpenAI-compatible server level by level."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from seatrial.cli.common import emit_json, json_target, out, out_folder
from seatrial.cli.options import names_of, settings_from, with_settings
from seatrial.cli.progress import (
    engine_view_table,
    gpu_view,
    levels_table,
    print_level_notes,
    print_run_notes,
    rich_table,
    running,
    server_timing_view,
)
from seatrial.errors import config_errors

if TYPE_CHECKING:
    from seatrial.load.config import BenchConfig
    from seatrial.runs.summaries.bench import BenchSummary

INVALID_EXIT = 1


def bench(
    url: Annotated[str, typer.Option(help="Server base URL, e.g. http://127.0.0.1:8000")],
    allow_invalid: Annotated[bool, typer.Option(help="Exit 0 even when a level is invalid")] = False,
    out_dir: Annotated[Path | None, typer.Option("--out", parser=out_folder, help="Run folder")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", parser=json_target, help="Write the summary JSON here")] = None,
    **settings: Any,
) -> None:
    """Load-test a running server: TTFT, TPOT, ITL, E2E, throughput per level, joined with /metrics."""
    from seatrial.load.config import BenchConfig
    from seatrial.load.settings import BenchSettings
    from seatrial.runs.levels import schedule_table, turns_table

    chosen = settings_from(BenchSettings, settings)
    with config_errors():
        cfg = BenchConfig.from_settings(chosen, url, allow_invalid=allow_invalid)
    summary = run_bench_cli(cfg, out_dir)
    out.print(levels_table(summary.levels))
    for table in (engine_view_table(summary.levels), server_timing_view(summary.levels), gpu_view(summary.levels)):
        if table is not None:
            out.print(table)
    for extra in (schedule_table(summary.levels), turns_table(summary.levels)):
        if extra is not None:
            out.print(rich_table(extra))
    print_level_notes(summary.levels)
    print_run_notes(summary.notes, summary.spans, summary.plan_check)
    emit_json(json_path, summary)
    if not summary.valid and not allow_invalid:
        raise typer.Exit(INVALID_EXIT)
    if summary.plan_check is not None and summary.plan_check.verdict == "FAIL":
        raise typer.Exit(INVALID_EXIT)


def run_bench_cli(cfg: BenchConfig, out_dir: Path | None) -> BenchSummary:
    import asyncio

    from seatrial.load.bench import run_bench
    from seatrial.load.workloads import measured_requests

    measured_requests(cfg.workload, cfg.load.requests)  # a trace read (and refused) before the folder is made
    with running(out_dir, "bench", cfg.model_dump(mode="json")) as (folder, progress):
        summary = asyncio.run(run_bench(cfg, folder, progress))
    return summary


#: bench's options from the settings model, in the order --help lists them
OPTIONS = [n for n in names_of("BenchSettings") if n not in names_of("ClientSettings")] + names_of("ClientSettings")


def register(app: typer.Typer) -> None:
    app.command("bench")(with_settings(bench, "BenchSettings", OPTIONS))
