"""Crossover rounds of the mixed trial (seed 004 §9-10) and their verdicts."""

from __future__ import annotations

import pytest

from seatrial.runs.verdicts import Verdict
from seatrial.trials.mixed_rules import MixedConfig, Round, crossover, order_of, verdict

CFG = MixedConfig(max_degradation_pct=50, min_direction_consistency=0.75, order_delta_limit_pct=10)


def rounds(degradations: list[float], iso: float = 100.0) -> list[Round]:
    """R0 (discarded, +900%) then one round per degradation, orders as seed 004 lays them out."""
    out = [
        Round(index=0, order=order_of(0), iso_ttft_ms_p50=iso, mix_ttft_ms_p50=iso * 10, iso_n=16, mix_n=16)
    ]
    for i, d in enumerate(degradations, 1):
        mix = iso * (1 + d / 100)
        out.append(
            Round(index=i, order=order_of(i), iso_ttft_ms_p50=iso, mix_ttft_ms_p50=mix, iso_n=16, mix_n=16)
        )
    return out


def test_round_orders_follow_seed_004() -> None:
    assert [order_of(i) for i in range(5)] == ["ISO->MIX", "MIX->ISO", "ISO->MIX", "MIX->ISO", "ISO->MIX"]


def test_degradation_formula_and_discarded_r0() -> None:
    x = crossover(rounds([20.0, 30.0, 40.0, 10.0]))
    assert x.retained == 4 and x.paired_median_pct == 25.0  # R0's +900% is not counted
    # BA = R1, R3 (20, 40); AB = R2, R4 (30, 10)
    assert x.ba_pct == pytest.approx(30.0) and x.ab_pct == pytest.approx(20.0)
    assert x.order_delta_pct == pytest.approx(-10.0)
    assert (
        Round(
            index=1, order="MIX->ISO", iso_ttft_ms_p50=45, mix_ttft_ms_p50=90, iso_n=1, mix_n=1
        ).degradation_pct
        == 100.0
    )


def test_seed_004_flipping_rounds_are_unstable() -> None:
    # R1 -2%, R2 +11%, R3 -1%, R4 +12%: median about +5% but directions flip
    x = crossover(rounds([-2.0, 11.0, -1.0, 12.0]))
    v, why = verdict(x, CFG, 4, 16)
    assert v is Verdict.UNSTABLE and "50%" in why


def test_order_dominating_the_effect_needs_review() -> None:
    # every round slower when mixed, but ISO->MIX rounds (AB) far more than MIX->ISO (BA)
    x = crossover(rounds([2.0, 40.0, 4.0, 36.0]))
    v, why = verdict(x, CFG, 4, 16)
    assert x.direction_consistency == 1.0 and v is Verdict.REVIEW_REQUIRED and "order dominates" in why


def test_consistent_degradation_against_the_limit() -> None:
    v, why = verdict(crossover(rounds([80.0, 85.0, 90.0, 84.0])), CFG, 4, 16)
    assert v is Verdict.FAIL and "+84.5%" in why
    v, why = verdict(crossover(rounds([10.0, 12.0, 11.0, 13.0])), CFG, 4, 16)
    assert v is Verdict.PASS and "+11.5%" in why


def test_too_few_rounds_or_requests_are_inconclusive() -> None:
    assert verdict(crossover(rounds([10.0])), CFG, 4, 16)[0] is Verdict.INCONCLUSIVE
    v, why = verdict(crossover(rounds([10.0, 12.0])), CFG, 4, 3)
    assert v is Verdict.INCONCLUSIVE and "3 short requests" in why


def test_mixed_much_faster_than_isolated_needs_review() -> None:
    # seed 004 §9: -80% -- mixed "faster" than isolated is an artefact, not a PASS
    v, why = verdict(crossover(rounds([-80.0, -78.0, -82.0, -79.0])), CFG, 4, 16)
    assert v is Verdict.REVIEW_REQUIRED and "79.5% faster" in why
    assert verdict(crossover(rounds([-3.0, -4.0, -2.0, -5.0])), CFG, 4, 16)[0] is Verdict.PASS
