"""``seatrial demo``: a local vLLM on CPU with a tiny model, then every capability, then one report.

Each step is a small function that takes the demo context and returns its summary; a failing step is
recorded with its error and the demo goes on, so the report shows what ran and what did not.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seatrial.jsonio import write_json
from seatrial.load.bench import run_bench
from seatrial.load.config import BenchConfig
from seatrial.report.html import write_report
from seatrial.report.runfolder import RunFolder
from seatrial.server.engine import EngineSpec, LocalEngine, make_tiny_model


@dataclass
class DemoContext:
    out: Path
    model_dir: Path
    url: str = ""
    log: Callable[[str], None] = print
    results: dict[str, Any] = field(default_factory=dict)


Step = Callable[[DemoContext], dict[str, Any]]


def step_bench(ctx: DemoContext) -> dict[str, Any]:
    cfg = BenchConfig.model_validate(
        {
            "target": {"url": ctx.url},
            "workload": {"name": "random", "input_len": 256, "output_len": 64},
            "load": {"concurrency": [1, 2, 4, 8], "requests": 16, "warmup": 2, "max_lag_ms": 200.0},
        }
    )
    with RunFolder(ctx.out / "bench", "bench", cfg.model_dump(mode="json")) as folder:
        summary = asyncio.run(run_bench(cfg, folder))
    write_report(ctx.out / "bench")
    return summary


def step_hw(ctx: DemoContext) -> dict[str, Any]:
    """Stage 1 hardware trials; on a machine without a GPU every trial is UNAVAILABLE with its reason."""
    from seatrial.hw import HwConfig, run_hw

    sheet = run_hw(HwConfig(duration_s=5.0)).report.to_json()
    write_json(ctx.out / "hw.json", sheet)
    return {"hw": sheet}


def step_accept(ctx: DemoContext) -> dict[str, Any]:
    """The small acceptance profile (every trial) against the local vLLM; verdicts go to the report."""
    from seatrial.trials import run_accept

    summary = run_accept(ctx.url, scale="small", out_dir=ctx.out / "accept")
    for t in summary["trials"]:
        ctx.log(f"   {t['name']:<13} {t['verdict']}")
    return {k: summary[k] for k in ("trials", "passed", "scale", "url") if k in summary}


def default_steps() -> list[tuple[str, Step]]:
    return [("hw", step_hw), ("bench", step_bench), ("accept", step_accept)]


def run_demo(
    out: Path,
    steps: list[tuple[str, Step]] | None = None,
    log: Callable[[str], None] = print,
    kv_cache_gib: float = 1.0,
) -> dict[str, Any]:
    """Start vLLM-CPU on a tiny generated model, run each step against it, write out/report.html."""
    out.mkdir(parents=True, exist_ok=True)
    ctx = DemoContext(out=out, model_dir=make_tiny_model(out / "tiny-model"), log=log)
    summary: dict[str, Any] = {"steps": []}
    log(f"starting vLLM-CPU on {ctx.model_dir} (about 90 s on 2 cores)")
    spec = EngineSpec(model_dir=ctx.model_dir, max_num_seqs=4, kv_cache_gib=kv_cache_gib)
    with LocalEngine(spec, out / "vllm.log") as engine:
        ctx.url = engine.url
        log(f"vLLM ready at {engine.url}: {engine.kv_cache_line()}")
        for name, step in steps or default_steps():
            log(f"== {name}")
            started = time.monotonic()
            try:
                result, error = step(ctx), None
            except Exception as exc:  # a failed step is reported, the demo goes on
                result, error = {}, f"{type(exc).__name__}: {exc}"
                log(traceback.format_exc(limit=3))
            summary["steps"].append(
                {
                    "name": name,
                    "ok": error is None,
                    "error": error,
                    "seconds": round(time.monotonic() - started, 1),
                }
            )
            summary.update(result)
            ctx.results[name] = result
    write_json(out / "summary.json", summary)
    write_json(out / "run.json", {"command": "demo", "config": {"out": str(out)}})
    write_report(out)
    return summary
