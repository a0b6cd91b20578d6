"""Prefix-cache verdicts (seed 004 §13-15): functional by the server's counters, performance by TTFT.

Definitions
- hit rate: Δprefix_cache_hits / Δprefix_cache_queries over the warm pass (tokens, vLLM's counters).
- expected hit rate: Σ cached / Σ prompt tokens of the warm requests, where a request's cached tokens
  are its longest common token prefix with the cached request of the same prefix, floored to whole
  cache blocks (only full blocks are cached).
- improvement: per pair, (TTFT without shared prefix - TTFT with it) / TTFT without x 100; the verdict
  reads the bootstrap CI of the paired median.
"""

from __future__ import annotations

from pydantic import BaseModel

from seatrial.runs.result import Performance
from seatrial.runs.verdicts import Verdict
from seatrial.stats import Estimate

MIN_WARM_REQUESTS = 4
MIN_PAIRS = 8


class Counters(BaseModel):
    hits: float | None
    queries: float | None
    cold_hits: float | None
    expected_hit_rate: float
    requests: int
    block_size: int
    cold_requests: int = 0  # the never-sent prompts cold_hits counts over (each may hit its BOS token)

    @property
    def hit_rate(self) -> float | None:
        if self.hits is None or not self.queries:
            return None
        return self.hits / self.queries


def cached_tokens(common_prefix: int, block_size: int) -> int:
    return (common_prefix // block_size) * block_size


def expected_hit_rate(common_prefixes: list[int], prompt_tokens: list[int], block_size: int) -> float:
    total = sum(prompt_tokens)
    return sum(cached_tokens(c, block_size) for c in common_prefixes) / total if total else 0.0


def functional(c: Counters, review_share: float) -> tuple[Verdict, str]:
    if c.hits is None or c.queries is None:
        return Verdict.UNAVAILABLE, "the server exposes no prefix-cache counters"
    if c.requests < MIN_WARM_REQUESTS:
        return Verdict.INCONCLUSIVE, f"{c.requests} warm requests < {MIN_WARM_REQUESTS}"
    if (c.cold_hits or 0) - c.cold_requests >= c.block_size:  # one hit a prompt: the BOS all share (llama.cpp)
        return (
            Verdict.REVIEW_REQUIRED,
            f"the cache was not cold: {c.cold_hits:.0f} hits on {c.cold_requests} never-sent prompts (more than "
            "the one BOS token each)",
        )
    if c.hits <= 0:
        looked = f"in {c.queries:.0f} queried tokens" if c.queries > 0 else "and the cache was never queried"
        return Verdict.FAIL, f"0 hits {looked} (expected {c.expected_hit_rate:.1%})"
    rate = c.hit_rate or 0.0
    if rate < review_share * c.expected_hit_rate:
        return Verdict.REVIEW_REQUIRED, (
            f"hit rate {rate:.1%} is below {review_share:.0%} of the expected {c.expected_hit_rate:.1%}"
        )
    return Verdict.PASS, f"hit rate {rate:.1%} (expected {c.expected_hit_rate:.1%})"


def performance(func: Verdict, gain: Estimate, good_pct: float) -> tuple[Performance, str]:
    if func is not Verdict.PASS:
        return "INCONCLUSIVE", "the cache did not work as counted, so no TTFT change can be credited to it"
    if gain.n < MIN_PAIRS or gain.value is None:
        return "INCONCLUSIVE", f"{gain.n} pairs < {MIN_PAIRS}"
    ci = f"median TTFT gain {gain.value:.1f}% (95% CI {gain.ci_low:.1f}..{gain.ci_high:.1f}%)"
    if gain.above(good_pct) or (gain.ci_low is not None and gain.ci_low >= good_pct):
        return "GOOD", f"{ci} >= {good_pct:g}%"
    if gain.below(good_pct):
        return "LOW", f"{ci} < {good_pct:g}%"
    return "INCONCLUSIVE", f"{ci} straddles {good_pct:g}%"
