"""Prefix-cache verdicts: functional by counters, performance by paired TTFT (seed 004 §13-15)."""

from __future__ import annotations

import pytest

from seatrial.runs.verdicts import Verdict
from seatrial.stats import Estimate, median_ci
from seatrial.trials.prefix_rules import Counters, cached_tokens, expected_hit_rate, functional, performance


def counters(hits: float | None, queries: float | None = 10_000, cold: float | None = 0.0) -> Counters:
    return Counters(
        hits=hits, queries=queries, cold_hits=cold, expected_hit_rate=0.9, requests=16, block_size=16
    )


def test_expected_hit_rate_counts_only_whole_blocks() -> None:
    assert cached_tokens(1025, 128) == 1024 and cached_tokens(127, 128) == 0
    # two requests of 1,057 tokens sharing 1,025: 1,024 cached each
    assert expected_hit_rate([1025, 1025], [1057, 1057], 128) == pytest.approx(1024 / 1057)
    assert expected_hit_rate([100], [200], 128) == 0.0


def test_zero_hits_fail() -> None:
    v, why = functional(counters(0.0), 0.5)
    assert v is Verdict.FAIL and "0 hits in 10000 queried tokens" in why
    # vLLM with --no-enable-prefix-caching does not even count queries
    v, why = functional(counters(0.0, queries=0.0), 0.5)
    assert v is Verdict.FAIL and "never queried" in why


def test_hits_far_below_prediction_need_review() -> None:
    v, why = functional(counters(3_000.0), 0.5)  # 30% < 50% of 90%
    assert v is Verdict.REVIEW_REQUIRED and "30.0%" in why


def test_hits_near_prediction_pass() -> None:
    v, why = functional(counters(8_000.0), 0.5)
    assert v is Verdict.PASS and "80.0%" in why


def test_missing_counters_unavailable_and_warm_cache_needs_review() -> None:
    assert functional(counters(None, None), 0.5)[0] is Verdict.UNAVAILABLE
    v, why = functional(counters(8_000.0, cold=512.0), 0.5)
    assert v is Verdict.REVIEW_REQUIRED and "not cold" in why
    few = Counters(hits=10, queries=100, cold_hits=0, expected_hit_rate=0.9, requests=2, block_size=16)
    assert functional(few, 0.5)[0] is Verdict.INCONCLUSIVE


def test_one_hit_per_never_sent_prompt_is_their_shared_bos() -> None:
    """llama-server counts the BOS token every prompt starts with as a cache hit: 36 hits over 36 never-sent
    prompts (seen on a GPU, evidence/h200-llamacpp/e) leave the cache cold; a block more is not."""
    def cold(hits: float) -> Counters:
        return Counters(hits=8_000.0, queries=10_000, cold_hits=hits, expected_hit_rate=0.9, requests=16,
                        block_size=16, cold_requests=36)  # fmt: skip

    assert functional(cold(36.0), 0.5)[0] is Verdict.PASS
    v, why = functional(cold(36.0 + 16), 0.5)
    assert v is Verdict.REVIEW_REQUIRED and "36 never-sent prompts" in why


def test_seed_004_functional_and_performance_are_separate() -> None:
    # hit rate 80%, TTFT 4% better -> functional PASS, performance LOW
    small_gain = median_ci([3.5, 4.0, 4.2, 3.8, 4.1, 3.9, 4.0, 4.3, 3.7, 4.0])
    assert performance(Verdict.PASS, small_gain, 20.0)[0] == "LOW"
    # TTFT 10% better but 0 hits -> functional FAIL, performance INCONCLUSIVE
    gain = median_ci([10.0] * 12)
    perf, why = performance(Verdict.FAIL, gain, 20.0)
    assert perf == "INCONCLUSIVE" and "credited" in why


def test_performance_good_or_inconclusive_by_the_confidence_interval() -> None:
    assert (
        performance(Verdict.PASS, median_ci([55.0, 60.0, 58.0, 62.0, 59.0, 61.0, 57.0, 60.0]), 20)[0]
        == "GOOD"
    )
    wide = median_ci([-30.0, 80.0, 5.0, 60.0, -10.0, 45.0, 20.0, 35.0])
    perf, why = performance(Verdict.PASS, wide, 20)
    assert perf == "INCONCLUSIVE" and "straddles" in why
    few = Estimate(value=50.0, ci_low=40.0, ci_high=60.0, n=3, enough=False)
    assert performance(Verdict.PASS, few, 20)[0] == "INCONCLUSIVE"
