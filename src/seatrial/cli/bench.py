"""``seatrial bench``: measure a running OpenAI-compatible server level by level."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError

from seatrial.cli.common import console, emit_json, out, parse_int_list
from seatrial.cli.progress import LiveProgress, engine_view_table, levels_table, print_level_notes
from seatrial.errors import ConfigError, RunInterrupted
from seatrial.load.bench import run_bench
from seatrial.load.config import BenchConfig
from seatrial.report.html import write_report
from seatrial.runs.folder import RunFolder

EOS_BY_DEFAULT = {"random", "prefill", "decode", "mixed", "shared-prefix"}
INVALID_EXIT = 1


def build_config(**kw: Any) -> BenchConfig:
    """Flags -> typed config; pydantic's complaints become one clear ConfigError."""
    try:
        return BenchConfig.model_validate(kw)
    except ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(msgs) from None


def bench(
    url: Annotated[str, typer.Option(help="Server base URL, e.g. http://127.0.0.1:8000")],
    workload: Annotated[str, typer.Option(help="random|unique-code|shared-prefix|prefill|decode|mixed|file")],
    model: Annotated[str | None, typer.Option(help="Model name; default: the server's first model")] = None,
    tokenizer: Annotated[Path | None, typer.Option(help="Local tokenizer.json or its folder")] = None,
    concurrency: Annotated[str, typer.Option(help="Closed-loop levels, e.g. 1,2,4,8")] = "1",
    rate: Annotated[float | None, typer.Option(help="Open-loop arrivals per second")] = None,
    max_concurrency: Annotated[
        int | None, typer.Option(help="Cap on in-flight requests in rate mode")
    ] = None,
    arrival: Annotated[str, typer.Option(help="poisson|constant (rate mode)")] = "poisson",
    requests: Annotated[int, typer.Option(help="Measured requests per level")] = 16,
    input_len: Annotated[int, typer.Option(help="Prompt tokens (server's count)")] = 256,
    output_len: Annotated[int, typer.Option(help="Output tokens per request")] = 64,
    ignore_eos: Annotated[bool | None, typer.Option("--ignore-eos/--no-ignore-eos")] = None,
    endpoint: Annotated[str, typer.Option(help="completions|chat")] = "completions",
    warmup: Annotated[int, typer.Option(help="Warm-up requests per level (excluded)")] = 2,
    file: Annotated[Path | None, typer.Option(help="JSONL prompts for --workload file")] = None,
    prefix_len: Annotated[int, typer.Option(help="shared-prefix: tokens per prefix")] = 512,
    num_prefixes: Annotated[int, typer.Option(help="shared-prefix: distinct prefixes")] = 4,
    long_share: Annotated[float, typer.Option(help="mixed: share of long-prefill requests")] = 0.2,
    long_input_len: Annotated[int, typer.Option(help="mixed: prompt tokens of long requests")] = 2048,
    seed: Annotated[
        int | None,
        typer.Option(help="Workload seed; default: a new one per run, recorded in run.json (reproduces it)"),
    ] = None,
    timeout: Annotated[float, typer.Option(help="Per-request total timeout, s")] = 600.0,
    stall_timeout: Annotated[
        float, typer.Option(help="Fail a request after this long without data, s")
    ] = 120.0,
    max_error_rate: Annotated[float, typer.Option(help="Errors above this share make a level invalid")] = 0.0,
    max_lag_ms: Annotated[float, typer.Option(help="Client lag p99 above this makes a level invalid")] = 50.0,
    api_key_env: Annotated[
        str, typer.Option(help="Environment variable holding the API key")
    ] = "OPENAI_API_KEY",
    metrics_url: Annotated[str | None, typer.Option(help="Prometheus endpoint; default URL/metrics")] = None,
    continuous_usage: Annotated[
        bool,
        typer.Option(
            help="Ask for usage in every chunk: exact tokens per chunk where the server puts several in one "
            "(speculative decoding), at a cost to the server (docs/metrics.md); without it, chunks that held "
            "several tokens are flagged in client_timing"
        ),
    ] = False,
    stamps: Annotated[
        str,
        typer.Option(
            help="Token times: 'kernel' (the kernel's receive time of each chunk) or 'user' (when the "
            "client reads it, as vLLM's benchmark client does)"
        ),
    ] = "kernel",
    workers: Annotated[int, typer.Option(help="Client processes on this host sharing each level")] = 1,
    ray: Annotated[
        str | None, typer.Option(help="Ray cluster address: --clients actors on its seatrial_client nodes")
    ] = None,
    clients: Annotated[int, typer.Option(help="Ray client actors (with --ray)")] = 2,
    allow_invalid: Annotated[bool, typer.Option(help="Exit 0 even when a level is invalid")] = False,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Run folder")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="Write the summary JSON here")] = None,
) -> None:
    """Load-test a running server: TTFT, TPOT, ITL, E2E, throughput per level, joined with /metrics."""
    levels = parse_int_list(concurrency, "--concurrency")
    cfg = build_config(
        target={
            "url": url,
            "model": model,
            "tokenizer": tokenizer,
            "endpoint": endpoint,
            "api_key_env": api_key_env,
            "continuous_usage": continuous_usage,
            "metrics_url": metrics_url,
        },
        workload={
            "name": workload,
            "input_len": input_len,
            "output_len": output_len,
            "ignore_eos": workload in EOS_BY_DEFAULT if ignore_eos is None else ignore_eos,
            "seed": seed,
            "file": file,
            "prefix_len": prefix_len,
            "num_prefixes": num_prefixes,
            "long_share": long_share,
            "long_input_len": long_input_len,
        },
        load={
            "concurrency": levels,
            "rate": rate,
            "max_concurrency": max_concurrency,
            "arrival": arrival,
            "requests": requests,
            "warmup": warmup,
            "timeout_s": timeout,
            "stall_timeout_s": stall_timeout,
            "max_error_rate": max_error_rate,
            "max_lag_ms": max_lag_ms,
            "stamps": stamps,
            "workers": workers,
            "ray": ray,
            "clients": clients,
        },
        allow_invalid=allow_invalid,
    )
    summary = run_bench_cli(cfg, out_dir)
    out.print(levels_table(summary["levels"]))
    if (engine := engine_view_table(summary["levels"])) is not None:
        out.print(engine)
    print_level_notes(summary["levels"])
    emit_json(json_path, summary)
    if not summary["valid"] and not allow_invalid:
        raise typer.Exit(INVALID_EXIT)


def run_bench_cli(cfg: BenchConfig, out_dir: Path | None) -> dict[str, Any]:
    folder = RunFolder(out_dir, "bench", cfg.model_dump(mode="json")) if out_dir else None
    try:
        with LiveProgress() as progress:
            summary = asyncio.run(run_bench(cfg, folder, progress))
        if out_dir:
            console.print(f"report: {write_report(out_dir)}", highlight=False)
        return summary
    except KeyboardInterrupt:
        where = f"; partial run folder: {out_dir}" if out_dir else ""
        raise RunInterrupted(f"interrupted{where}") from None
    finally:
        if folder:
            folder.close()


def register(app: typer.Typer) -> None:
    app.command()(bench)
