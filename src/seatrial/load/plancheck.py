"""``--plan plan.json``: the plan's KV capacity checked against the engine that then runs (its
``vllm:cache_config_info`` gauge, else its start-up log line), PASS within 3%, FAIL beyond."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp

from seatrial.errors import ConfigError, config_errors
from seatrial.plan.models import PlanResult
from seatrial.runs.summaries.bench import PlanCheck
from seatrial.server.capacity import EngineKv, cache_info, kv_from_labels, kv_from_log_line

TOLERANCE_PCT = 3.0


def read_plan(path: Path) -> PlanResult:
    """A ``seatrial plan --json`` file; ConfigError (exit 2) naming what is wrong with it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"--plan {path}: {exc.strerror or exc}") from None
    with config_errors(f"--plan {path}: not a `seatrial plan --json` result"):
        return PlanResult.model_validate_json(data)


def judge(path: Path, plan: PlanResult, engine: EngineKv | None, why_none: str) -> PlanCheck:
    """The check: planned against the engine's tokens, or UNAVAILABLE with ``why_none``."""
    base = {"plan": str(path), "kv_tokens_planned": plan.kv_cache_tokens, "tolerance_pct": TOLERANCE_PCT,
            "max_concurrency_planned": plan.max_concurrency}  # fmt: skip
    if engine is None:
        return PlanCheck(verdict="UNAVAILABLE", reason=why_none, **base)
    error = (plan.kv_cache_tokens - engine.tokens) / engine.tokens * 100.0
    verdict = "PASS" if abs(error) <= TOLERANCE_PCT else "FAIL"
    reason = None if verdict == "PASS" else (
        f"the plan's {plan.kv_cache_tokens:,} KV tokens are {error:+.2f}% off the engine's {engine.tokens:,} "
        f"(more than {TOLERANCE_PCT:g}%)"
    )  # fmt: skip
    return PlanCheck(verdict=verdict, reason=reason, kv_tokens_engine=engine.tokens, error_pct=round(error, 4),
                     engine_source=engine.source, **base)  # fmt: skip


async def check_plan(
    path: Path, http: aiohttp.ClientSession, metrics_url: str, log_line: str | None = None
) -> PlanCheck:
    """Read the plan, then the engine's capacity from ``metrics_url`` (else ``log_line``), and judge."""
    plan = read_plan(path)
    text = None
    try:
        async with http.get(metrics_url, timeout=aiohttp.ClientTimeout(total=10)) as resp:
            text = await resp.text() if resp.status == 200 else None
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
        text = None
    engine = kv_from_labels(cache_info(text or "")) or kv_from_log_line(log_line)
    why = (f"{metrics_url} has no vllm:cache_config_info with kv_cache_size_tokens or num_gpu_blocks x block_size"
           + ("" if text is not None else " (it could not be read)") + " and no start-up log line says it")  # fmt: skip
    return judge(path, plan, engine, why)
