"""``seatrial capacity``: the load a deployment carries within its SLO, as a lower bound."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from seatrial.cli.common import console, emit_json, escape, json_target, out, out_folder
from seatrial.cli.options import settings_from, with_settings
from seatrial.cli.progress import LiveProgress, rich_table
from seatrial.errors import RunInterrupted, config_errors

#: bench's settings that capacity takes as they are (it sets the load of each probe itself)
BENCH_OPTIONS = [
    "model", "tokenizer", "endpoint", "api_key_env", "metrics_url", "continuous_usage", "workload",
    "input_len", "output_len", "ignore_eos", "seed", "file", "prefix_len", "num_prefixes", "long_share",
    "long_input_len", "warmup", "timeout_s", "stall_timeout_s", "max_lag_ms", "stamps", "workers", "ray",
    "clients", "otlp_listen", "otlp_flush_s", "gpu_telemetry", "plan",
]  # fmt: skip
CAPACITY_OPTIONS = [
    "slo", "attainment", "mode", "confidence", "precision", "start", "max_rate", "probe_requests",
    "max_probe_requests", "max_probes", "gpus", "gpu_hour_usd", "target_rate", "min_rate", "min_concurrency",
    "time_budget",
]  # fmt: skip
NOT_FOUND_EXIT, NOTHING_MEASURED_EXIT = 1, 8


def capacity(
    url: Annotated[str, typer.Option(help="Server base URL, e.g. http://127.0.0.1:8000")],
    out_dir: Annotated[Path | None, typer.Option("--out", parser=out_folder, help="Run folder")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", parser=json_target, help="Write the summary JSON here")] = None,
    **settings: Any,
) -> None:
    """Find the highest load (req/s, or users) whose SLO attainment's lower bound meets the target; exit 0
    when a capacity was found, 1 when even the lowest probe misses (the floor: "below" it), a probe was
    invalid or the time budget was spent (its bracket is said), 8 when nothing was measured."""
    import asyncio

    from seatrial.capacity.config import CapacityConfig
    from seatrial.capacity.run import run_capacity
    from seatrial.load.config import BenchConfig
    from seatrial.load.settings import BenchSettings
    from seatrial.report.html import write_report
    from seatrial.runs.capacity import capacity_tables
    from seatrial.runs.folder import RunFolder
    from seatrial.runs.levels import plan_check_line, span_lines

    bench = settings_from(BenchSettings, {k: settings[k] for k in BENCH_OPTIONS})
    ccfg = settings_from(CapacityConfig, {k: settings[k] for k in CAPACITY_OPTIONS})
    with config_errors():
        cfg = BenchConfig.from_settings(bench, url)
    config = {"bench": cfg.model_dump(mode="json"), "capacity": ccfg.model_dump(mode="json")}
    folder = RunFolder(out_dir, "capacity", config) if out_dir else None
    log = lambda line: console.print(escape(line), highlight=False)  # noqa: E731
    try:
        with LiveProgress() as progress:
            summary = asyncio.run(run_capacity(cfg, ccfg, folder, log, progress))
    except KeyboardInterrupt:
        where = f"; partial run folder: {out_dir}" if out_dir else ""
        raise RunInterrupted(f"interrupted{where}") from None
    finally:
        if folder:
            folder.close()
    for table in capacity_tables(summary):
        out.print(rich_table(table))
    for note in summary.notes:
        console.print(f"[yellow]note[/] {escape(note)}", highlight=False)
    for line in span_lines(summary.spans):
        console.print(f"[yellow]spans[/] {escape(line)}", highlight=False)
    if summary.plan_check is not None:
        console.print(escape(plan_check_line(summary.plan_check)), highlight=False)
    if out_dir:
        console.print(f"report: {write_report(out_dir)}", highlight=False)
    emit_json(json_path, summary)
    _exit(summary)


def _exit(summary: Any) -> None:
    cap = summary.capacity
    if not any(p.valid for p in summary.probes):
        console.print("nothing was measured: no probe was valid (exit 8)")
        raise typer.Exit(NOTHING_MEASURED_EXIT)
    if cap.ended_early == "budget":
        console.print(f"[yellow]search stopped:[/] {escape(cap.stop_reason)}")
        raise typer.Exit(NOT_FOUND_EXIT)
    if not cap.found:
        console.print(f"[red]no capacity:[/] {escape(_why_none(summary.probes))} ({escape(cap.stop_reason)})")
        raise typer.Exit(NOT_FOUND_EXIT)
    if any(p.verdict == "INVALID" for p in summary.probes):
        console.print(f"[yellow]search stopped:[/] {escape(cap.stop_reason)}")
        raise typer.Exit(NOT_FOUND_EXIT)
    if summary.plan_check is not None and summary.plan_check.verdict == "FAIL":
        raise typer.Exit(NOT_FOUND_EXIT)


def _why_none(probes: list[Any]) -> str:
    """Why no load met the SLO: one that missed it, or probes whose intervals straddled it."""
    lowest = min(probes, key=lambda p: p.load)
    if lowest.verdict == "MISSES":
        return f"even the lowest probe ({lowest.load:g}) does not meet the SLO"
    if lowest.verdict == "INCONCLUSIVE":
        return (
            f"the lowest probe ({lowest.load:g}) was INCONCLUSIVE: its interval straddles the SLO's attainment, "
            "so whether it meets the SLO is not known (more requests per probe: --max-probe-requests)"
        )
    return f"the lowest probe ({lowest.load:g}) was {lowest.verdict}"


def register(app: typer.Typer) -> None:
    command = with_settings(capacity, "BenchSettings", BENCH_OPTIONS)
    app.command("capacity")(with_settings(command, "CapacityConfig", CAPACITY_OPTIONS))
