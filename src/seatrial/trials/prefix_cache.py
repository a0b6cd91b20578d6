"""``prefix-cache``: does the server reuse a shared prefix (counters), and does it pay off (TTFT)?

Order: try ``POST /reset_prefix_cache`` (vLLM dev mode); the control pass (every request with its own
prefix, the same questions) measures TTFT without sharing and must show no hits; the cold pass sends
the first request of each shared prefix (must show no hits either); the warm pass sends the rest,
and the counters' deltas over it give the hit rate.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from pydantic import Field

from seatrial.load.records import RequestRecord
from seatrial.load.workloads import RequestSpec
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import Verdict
from seatrial.stats import median_ci, relative_differences_pct
from seatrial.trials.configs import TrialConfig
from seatrial.trials.env import TrialEnv, first_error
from seatrial.trials.prefix_rules import Counters, expected_hit_rate, functional, performance

DEFAULT_BLOCK_SIZE = 16
HEADROOM_TOKENS = 8


class PrefixCacheConfig(TrialConfig):
    num_prefixes: int = Field(4, ge=1)
    prefix_len: int = Field(32768, ge=1)
    questions_per_prefix: int = Field(16, ge=2)
    question_len: int = Field(64, ge=1)
    output_len: int = Field(8, ge=1)
    concurrency: int = Field(4, ge=1)
    block_size: int | None = Field(None, ge=1)
    review_share: float = Field(0.5, gt=0, le=1)
    good_improvement_pct: float = Field(20.0, ge=0)


def by_index(records: list[RequestRecord]) -> dict[int, RequestRecord]:
    """Records keyed by their position in the spec list (the request id's numeric suffix)."""
    return {int(r.request_id.rsplit("-", 1)[1]): r for r in records}


def paired_ttft(control: list[RequestRecord], shared: list[RequestRecord]) -> list[tuple[float, float]]:
    """(TTFT without shared prefix, TTFT with it) for each question sent both ways."""
    by_c, by_s = by_index(control), by_index(shared)
    out = []
    for i, rec in by_s.items():
        a, b = by_c[i].ttft_ms if i in by_c else None, rec.ttft_ms
        if a and b and rec.ok and by_c[i].ok:
            out.append((a, b))
    return out


async def common_prefix(env: TrialEnv, a: str, b: str) -> int:
    """Tokens the server sees in common at the start of prompts ``a`` and ``b``."""
    tok = env.session.tokenizer
    ta, tb = await tok.encode(a), await tok.encode(b)
    n = next((i for i, (x, y) in enumerate(zip(ta, tb, strict=False)) if x != y), min(len(ta), len(tb)))
    return n + (await tok.count(a) - len(ta))  # special tokens the server prepends are shared too


async def reset_cache(env: TrialEnv) -> str:
    try:
        async with env.session.http.post(f"{env.target.url}/reset_prefix_cache") as resp:
            return "reset" if resp.status == 200 else f"not reset (HTTP {resp.status})"
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
        return f"not reset ({exc})"


async def build(env: TrialEnv) -> tuple[list[RequestSpec], list[RequestSpec], list[RequestSpec]]:
    """Cold specs (one per prefix), warm specs (the other questions), control specs (own prefixes)."""
    cfg = env.profile.config(PrefixCacheConfig)
    k, q = cfg.num_prefixes, cfg.questions_per_prefix
    prefix_len = cfg.prefix_len
    if env.info.max_model_len:  # leave room for the question, the output and the separator
        prefix_len = min(
            prefix_len, env.info.max_model_len - cfg.question_len - cfg.output_len - HEADROOM_TOKENS
        )
    prefixes = await env.specs(k, prefix_len, cfg.output_len, "prefix")
    questions = await env.specs(k * q, cfg.question_len, cfg.output_len, "question")
    own = await env.specs(k * (q - 1), prefix_len, cfg.output_len, "own")
    tok = env.session.tokenizer

    async def spec(prefix: RequestSpec, question: RequestSpec, kind: str) -> RequestSpec:
        text = f"{prefix.prompt}\n{question.prompt}"
        return RequestSpec(text, cfg.output_len, await tok.count(text), kind, True)

    cold = [await spec(prefixes[i], questions[i * q], "cold") for i in range(k)]
    warm: list[RequestSpec] = []
    control: list[RequestSpec] = []
    for j in range(1, q):
        for i in range(k):
            warm.append(await spec(prefixes[i], questions[i * q + j], "shared"))
            control.append(await spec(own[len(control)], questions[i * q + j], "unique"))
    return cold, warm, control


async def run(env: TrialEnv) -> TrialResult:
    cfg = env.profile.config(PrefixCacheConfig)
    block = cfg.block_size or env.info.block_size or DEFAULT_BLOCK_SIZE
    reset = await reset_cache(env)
    cold, warm, control = await build(env)
    s0 = await env.snapshot()
    control_recs, _ = await env.send_all(control, cfg.concurrency, f"P{env.next_index()}-control")
    s1 = await env.snapshot()
    cold_recs, _ = await env.send_all(cold, 1, f"P{env.next_index()}-cold")
    s2 = await env.snapshot()
    warm_recs, _ = await env.send_all(warm, cfg.concurrency, f"P{env.next_index()}-warm")
    s3 = await env.snapshot()
    k = cfg.num_prefixes
    commons = [await common_prefix(env, str(w.prompt), str(cold[i % k].prompt)) for i, w in enumerate(warm)]
    prompts = [w.expected_prompt_tokens or 0 for w in warm]
    control_hits, cold_hits = s0.delta(s1, "prefix_cache_hits"), s1.delta(s2, "prefix_cache_hits")
    counters = Counters(
        hits=s2.delta(s3, "prefix_cache_hits"),
        queries=s2.delta(s3, "prefix_cache_queries"),
        cold_hits=None if control_hits is None else control_hits + (cold_hits or 0),
        expected_hit_rate=expected_hit_rate(commons, prompts, block),
        requests=sum(r.ok for r in warm_recs),
        block_size=block,
        cold_requests=len(control_recs) + len(cold_recs),
    )
    func, why_f = functional(counters, cfg.review_share)
    failed = [r for r in (*control_recs, *cold_recs, *warm_recs) if not r.ok]
    if failed:
        func, why_f = Verdict.FAIL, f"{len(failed)} requests failed: {first_error(failed)}"
    pairs = paired_ttft(control_recs, warm_recs)
    gains = [-d for d in relative_differences_pct([a for a, _ in pairs], [b for _, b in pairs])]
    gain = median_ci(gains)
    perf, why_p = performance(func, gain, cfg.good_improvement_pct)
    evidence: dict[str, Any] = {
        "hits": counters.hits,
        "queries": counters.queries,
        "hit_rate": counters.hit_rate,
        "expected_hit_rate": counters.expected_hit_rate,
        "cold_hits": counters.cold_hits,
        "control_hits": control_hits,  # seed 001: the same questions without a shared prefix
        "cache_reset": reset,
        "server_prefix_caching": env.info.prefix_caching,
        "block_size": block,
        "block_size_source": "profile"
        if cfg.block_size
        else ("server" if env.info.block_size else "assumed"),
        "prompt_tokens_mean": sum(prompts) / len(prompts) if prompts else None,
        "common_prefix_tokens_mean": sum(commons) / len(commons) if commons else None,
        "ttft_gain_pct": gain.model_dump(),
        "ttft_ms_shared": [b for _, b in pairs],
        "ttft_ms_unique": [a for a, _ in pairs],
    }
    return TrialResult(
        name="prefix-cache",
        verdict=func,
        functional=func,
        performance=perf,
        reasons=[f"functional: {why_f}", f"performance: {why_p}"],
        samples={"warm_requests": len(warm_recs), "cold_requests": len(cold_recs), "pairs": len(pairs)},
        evidence=evidence,
    )
