"""``kv-tier`` (seed 004 §16-17): a working set larger than the KV capacity.

``sessions`` each send a first turn of ``session_len`` context tokens, then return in the same order
(least recently used first, so an LRU cache without a lower tier has dropped them) with the same
context plus a question. Measured: preemptions, the share of returning tokens served from cache
(prefix hits / queries), the re-prefill cost (returning TTFT p50 / first-turn TTFT p50: about 1
when the context is recomputed, well below 1 when it is kept or restored) and any offload counters.

Verdicts: capacity unknown or the working set above ``max_working_set_tokens`` -> UNAVAILABLE;
no offload tier on the server -> UNSUPPORTED (evidence still measured); fewer than 4 sessions ->
INCONCLUSIVE; a tier whose counters stay at zero -> FAIL; restored sessions no faster than
recomputed ones -> REVIEW_REQUIRED; else PASS. With ``baseline_url`` (the same model served with
KV offload off) the same sessions run there too, and a PASS also needs returning sessions faster
than on the baseline (else REVIEW_REQUIRED).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from pydantic import Field

from seatrial.load.config import BenchConfig, ServerTarget
from seatrial.load.level import open_session
from seatrial.load.workloads import RequestSpec
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import Verdict
from seatrial.stats import median_ci, min_samples
from seatrial.trials.configs import TrialConfig
from seatrial.trials.env import TrialEnv, first_error, ok_values
from seatrial.trials.serverinfo import server_info

HEADROOM_TOKENS = 8


class KvTierConfig(TrialConfig):
    capacity_tokens: int | None = Field(None, ge=1)
    pressure_factor: float = Field(1.5, gt=1)
    session_len: int = Field(16384, ge=16)
    question_len: int = Field(32, ge=1)
    output_len: int = Field(8, ge=1)
    concurrency: int = Field(4, ge=1)
    max_working_set_tokens: int = Field(8_000_000, ge=1)
    baseline_url: str | None = None  # the same model served with KV offload off, to compare


def size_sessions(
    capacity: int | None, session_len: int, factor: float, budget: int
) -> tuple[int, str | None]:
    """Sessions needed for ``factor`` x capacity, or 0 and why the trial cannot run."""
    if not capacity:
        return 0, "KV capacity unknown: the server reports none; set kv-tier.capacity_tokens in the profile"
    sessions = math.ceil(capacity * factor / session_len)
    if sessions * session_len > budget:
        return 0, (
            f"KV capacity {capacity:,} tokens needs a working set of {sessions * session_len:,} tokens "
            f"({factor:g}x); this profile allows {budget:,} (kv-tier.max_working_set_tokens)"
        )
    return sessions, None


def judge(
    offload_on: bool, offload_moved: float, reprefill: float | None, ci_high: float | None, sessions: int
) -> tuple[Verdict, str]:
    """The verdict of a run that happened (see the module docstring for the order of the rules)."""
    if not offload_on:
        cost = "unknown" if reprefill is None else f"{reprefill:.2f}x"
        return (
            Verdict.UNSUPPORTED,
            f"no KV offload tier on this server; returning sessions cost {cost} the first turn",
        )
    if sessions < min_samples(50):
        return Verdict.INCONCLUSIVE, f"{sessions} sessions < {min_samples(50)}"
    if offload_moved <= 0:
        return Verdict.FAIL, "an offload tier is configured but its counters did not move under pressure"
    if ci_high is None or ci_high >= 1.0:
        return Verdict.REVIEW_REQUIRED, "restored sessions were not clearly faster than recomputing them"
    return Verdict.PASS, f"returning sessions cost {reprefill:.2f}x the first turn with offload active"


async def baseline_env(env: TrialEnv, url: str) -> TrialEnv:
    """The same trial environment pointed at the baseline server (the same model, KV offload off)."""
    t = env.target
    target = ServerTarget(
        url=url, model=t.model, tokenizer=t.tokenizer, endpoint=t.endpoint, api_key_env=t.api_key_env
    )
    session = await open_session(BenchConfig(target=target), env.session.http)
    info = await server_info(
        env.session.http, target.url, target.resolved_metrics_url, session.endpoint.headers
    )
    return replace(env, session=session, target=target, info=info)


def vs_baseline(run: dict[str, Any], base: dict[str, Any]) -> float | None:
    """Returning-session TTFT p50 on the server under test / on the baseline server."""
    a, b = run["ttft_ms_return_p50"]["value"], base["ttft_ms_return_p50"]["value"]
    return a / b if a and b else None


def against_baseline(v: Verdict, why: str, ratio: float | None) -> tuple[Verdict, str]:
    """A PASS stands only when returning sessions are also faster than on the server without offload."""
    if v is not Verdict.PASS:
        return v, why
    if ratio is None or ratio >= 1.0:
        return Verdict.REVIEW_REQUIRED, f"returning sessions were not faster than without offload ({ratio})"
    return v, f"{why}; {ratio:.2f}x the TTFT of the server without offload"


async def sessions_run(env: TrialEnv, sessions: int, session_len: int) -> dict[str, Any]:
    cfg = env.profile.config(KvTierConfig)
    contexts = await env.specs(sessions, session_len, cfg.output_len, "session")
    questions = await env.specs(sessions, cfg.question_len, cfg.output_len, "question")
    returning = [
        RequestSpec(f"{c.prompt}\n{q.prompt}", cfg.output_len, None, "return", True)
        for c, q in zip(contexts, questions, strict=True)
    ]
    s0 = await env.snapshot()
    first, _ = await env.send_all(contexts, cfg.concurrency, f"K{env.next_index()}-first")
    s1 = await env.snapshot()
    back, _ = await env.send_all(returning, cfg.concurrency, f"K{env.next_index()}-return")
    s2 = await env.snapshot()
    ttft_first, ttft_back = median_ci(ok_values(first, "ttft_ms")), median_ci(ok_values(back, "ttft_ms"))
    ratio = ttft_back.value / ttft_first.value if ttft_first.value and ttft_back.value else None
    ratio_hi = ttft_back.ci_high / ttft_first.ci_low if ttft_first.ci_low and ttft_back.ci_high else None
    hits, queries = s1.delta(s2, "prefix_cache_hits"), s1.delta(s2, "prefix_cache_queries")
    return {
        "sessions": sessions,
        "session_len": session_len,
        "ttft_ms_first_p50": ttft_first.model_dump(),
        "ttft_ms_return_p50": ttft_back.model_dump(),
        "reprefill_cost": ratio,
        "reprefill_cost_ci_high": ratio_hi,
        "preemptions": s0.delta(s2, "preemptions"),
        "return_hits": hits,
        "return_queries": queries,
        "return_hit_rate": hits / queries if hits is not None and queries else None,
        "offload_counters": s0.offload_delta(s2),
        "kv_cache_usage": s2.values.get("kv_cache_usage"),
        "failed": sum(not r.ok for r in (*first, *back)),
        "first_error": first_error([*first, *back]),
    }


async def run(env: TrialEnv) -> TrialResult:
    cfg = env.profile.config(KvTierConfig)
    capacity = cfg.capacity_tokens or env.info.kv_capacity_tokens
    session_len = cfg.session_len
    if env.info.max_model_len:
        session_len = min(
            session_len, env.info.max_model_len - cfg.question_len - cfg.output_len - HEADROOM_TOKENS
        )
    sessions, why_not = size_sessions(capacity, session_len, cfg.pressure_factor, cfg.max_working_set_tokens)
    evidence: dict[str, Any] = {
        "kv_capacity_tokens": capacity,
        "capacity_source": "profile" if cfg.capacity_tokens else "server",
        "kv_offloading_size": env.info.kv_offloading_size,
    }
    if why_not:
        return TrialResult(
            name="kv-tier",
            verdict=Verdict.UNAVAILABLE,
            reasons=[why_not],
            samples={"sessions": 0},
            evidence=evidence,
        )
    m = await sessions_run(env, sessions, session_len)
    evidence |= m
    moved = sum(m["offload_counters"].values())
    offload_on = env.info.kv_offloading_size is not None or bool(m["offload_counters"])
    v, why = judge(offload_on, moved, m["reprefill_cost"], m["reprefill_cost_ci_high"], sessions)
    if cfg.baseline_url:
        base = await sessions_run(await baseline_env(env, cfg.baseline_url), sessions, session_len)
        evidence["baseline"] = {"url": cfg.baseline_url, **base}
        evidence["return_ttft_vs_baseline"] = vs_baseline(m, base)
        v, why = against_baseline(v, why, evidence["return_ttft_vs_baseline"])
    if m["failed"]:
        v, why = Verdict.FAIL, f"{m['failed']} requests failed: {m['first_error']}"
    return TrialResult(
        name="kv-tier", verdict=v, reasons=[why], samples={"sessions": sessions}, evidence=evidence
    )
