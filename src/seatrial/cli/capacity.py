"""``seatrial capacity``: the load a deployment carries within its SLO, as a lower bound."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from seatrial.cli.common import console, emit_json, escape, json_target, out, out_folder
from seatrial.cli.options import settings_from, with_settings
from seatrial.cli.progress import print_run_notes, rich_table, running
from seatrial.errors import ConfigError, config_errors

if TYPE_CHECKING:
    from seatrial.server.serve import Serve

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
    url: Annotated[str | None, typer.Option(help="Server base URL, e.g. http://127.0.0.1:8000 (one start)")] = None,
    serve: Annotated[str | None, typer.Option(help="Command that starts the server, with {port}: searched on --starts fresh starts")] = None,
    serve_file: Annotated[Path | None, typer.Option(help="YAML of experiment's serve: block (command with {port}, env, guard, nice, ...)")] = None,
    starts: Annotated[int, typer.Option(min=1, help="With --serve: fresh starts, each searched (a lower prediction bound over them)")] = 1,
    out_dir: Annotated[Path | None, typer.Option("--out", parser=out_folder, help="Run folder")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", parser=json_target, help="Write the summary JSON here")] = None,
    **settings: Any,
) -> None:
    """Find the highest load (req/s, or users) whose SLO attainment's lower bound meets the target; exit 0
    when a capacity was found, 1 when even the lowest probe misses (the floor: "below" it), a probe was
    invalid or the time budget was spent (its bracket is said), 8 when nothing was measured. With
    ``--serve`` and ``--starts N``: the search on N fresh starts and the capacity a fresh replica holds
    (exit 0 with it, 1 when a start found none or was not measured)."""
    import asyncio

    if sum(x is not None for x in (url, serve, serve_file)) != 1:
        raise ConfigError("give one of --url (a running server), --serve (a command that starts one) or --serve-file")
    if serve is not None or serve_file is not None:
        return _over_starts(serve_spec(serve, serve_file), starts, out_dir, json_path, settings)
    if starts != 1 or url is None:
        raise ConfigError("--starts needs --serve: a running server (--url) is one start")

    from seatrial.capacity.config import CapacityConfig
    from seatrial.capacity.run import run_capacity
    from seatrial.load.config import BenchConfig
    from seatrial.load.settings import BenchSettings
    from seatrial.runs.capacity import capacity_tables

    bench = settings_from(BenchSettings, {k: settings[k] for k in BENCH_OPTIONS})
    ccfg = settings_from(CapacityConfig, {k: settings[k] for k in CAPACITY_OPTIONS})
    with config_errors():
        cfg = BenchConfig.from_settings(bench, url)
    config = {"bench": cfg.model_dump(mode="json"), "capacity": ccfg.model_dump(mode="json")}
    log = lambda line: console.print(escape(line), highlight=False)  # noqa: E731
    with running(out_dir, "capacity", config) as (folder, progress):
        summary = asyncio.run(run_capacity(cfg, ccfg, folder, log, progress))
    for table in capacity_tables(summary):
        out.print(rich_table(table))
    print_run_notes(summary.notes, summary.spans, summary.plan_check)
    emit_json(json_path, summary)
    _exit(summary)


def serve_spec(command: str | None, path: Path | None) -> Serve:
    """``--serve CMD`` (the command alone) or ``--serve-file`` (experiment's ``serve:`` block), validated."""
    import shlex

    from seatrial.server.serve import Serve
    from seatrial.yamlfile import load_mapping

    where = f"--serve-file {path}" if path else "--serve"
    with config_errors(where):
        return Serve.model_validate(load_mapping(where, path) if path else {"command": shlex.split(command or "")})


def _over_starts(serve: Serve, starts: int, out_dir: Path | None, json_path: Path | None, settings: dict[str, Any]) -> None:
    from seatrial.capacity.config import CapacityConfig
    from seatrial.capacity.starts import run_starts, starts_config
    from seatrial.load.settings import BenchSettings

    if serve.guard is not None and out_dir is None:
        raise ConfigError("serve.guard needs --out: the guard's history is written in the run folder")
    bench = settings_from(BenchSettings, {k: settings[k] for k in BENCH_OPTIONS})
    ccfg = settings_from(CapacityConfig, {k: settings[k] for k in CAPACITY_OPTIONS})
    config = starts_config(serve, starts, bench, ccfg)
    log = lambda line: console.print(escape(line), highlight=False)  # noqa: E731
    with running(out_dir, "capacity", config, requests=False) as (folder, progress):
        replica = run_starts(bench, ccfg, serve, starts, out_dir, log, progress)
        if folder:
            folder.write_summary(replica)
    for st in replica.starts:
        console.print(f"start {st.start} (seed {st.seed}): {escape(st.error or st.line)}", highlight=False)
    if replica.capacity is not None:
        out.print(f"capacity of a fresh replica: {replica.capacity:.4g} {replica.unit} ({escape(replica.method)})")
    elif replica.below is not None:
        out.print(f"capacity of a fresh replica: below {replica.below:g} {replica.unit} ({escape(replica.method)})")
    else:
        out.print(f"no capacity of a fresh replica: {escape(replica.method)}")
    emit_json(json_path, replica)
    if replica.capacity is None:
        raise typer.Exit(NOT_FOUND_EXIT)


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
