"""Mixed-workload verdict (seed 004 §9-10): crossover rounds, paired degradation, stability.

Definitions
- round r: ISO (short requests alone) and MIX (the same kind of short requests while long-prefill
  requests run), in the order ISO->MIX for even r (AB) and MIX->ISO for odd r (BA); R0 is discarded.
- degradation_r = (MIX TTFT p50 - ISO TTFT p50) / ISO TTFT p50 x 100.
- order delta = median degradation of AB rounds - median of BA rounds.
Rules, in order: too few rounds -> INCONCLUSIVE; direction consistency below the limit -> UNSTABLE;
|order delta| above ``order_delta_limit_pct`` and above |paired median| (order dominates the effect)
-> REVIEW_REQUIRED; MIX faster than ISO by more than ``max_speedup_pct`` (seed 004 §9's -80%: added
load does not speed requests up, so something else dominates the measurement) -> REVIEW_REQUIRED;
paired median above ``max_degradation_pct`` -> FAIL; else PASS.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from seatrial.runs.verdicts import Verdict
from seatrial.stats import direction_consistency, median
from seatrial.trials.configs import TrialConfig

MIN_RETAINED = 2


class MixedConfig(TrialConfig):
    """Seed 004 §9-10: R0 ISO->MIX discarded, then alternating MIX->ISO / ISO->MIX rounds."""

    rounds: int = Field(5, ge=2)
    short_requests: int = Field(32, ge=1)
    short_concurrency: int = Field(4, ge=1)
    short_input_len: int = Field(128, ge=1)
    short_output_len: int = Field(64, ge=2)
    long_input_len: int = Field(32768, ge=1)
    long_concurrency: int = Field(2, ge=1)
    max_degradation_pct: float = 50.0
    min_direction_consistency: float = Field(0.75, gt=0.5, le=1.0)
    order_delta_limit_pct: float = Field(10.0, ge=0)
    max_speedup_pct: float = Field(10.0, ge=0)
    # a MIX phase with a long prefill in flight for less of its time than this measured no interference
    min_long_share: float = Field(0.5, ge=0, le=1)


class Round(BaseModel):
    index: int
    order: str  # "ISO->MIX" (AB) or "MIX->ISO" (BA)
    iso_ttft_ms_p50: float | None
    mix_ttft_ms_p50: float | None
    iso_n: int
    mix_n: int

    @property
    def retained(self) -> bool:
        return self.index > 0

    @property
    def degradation_pct(self) -> float | None:
        if not self.iso_ttft_ms_p50 or self.mix_ttft_ms_p50 is None:
            return None
        return (self.mix_ttft_ms_p50 - self.iso_ttft_ms_p50) / self.iso_ttft_ms_p50 * 100


def order_of(index: int) -> str:
    return "ISO->MIX" if index % 2 == 0 else "MIX->ISO"


class Crossover(BaseModel):
    paired_median_pct: float | None
    direction_consistency: float | None
    ab_pct: float | None
    ba_pct: float | None
    order_delta_pct: float | None
    retained: int


def crossover(rounds: list[Round]) -> Crossover:
    kept = [r for r in rounds if r.retained and r.degradation_pct is not None]
    d = [r.degradation_pct for r in kept if r.degradation_pct is not None]
    ab = median([r.degradation_pct for r in kept if r.order == "ISO->MIX" and r.degradation_pct is not None])
    ba = median([r.degradation_pct for r in kept if r.order == "MIX->ISO" and r.degradation_pct is not None])
    return Crossover(
        paired_median_pct=median(d),
        direction_consistency=direction_consistency(d),
        ab_pct=ab,
        ba_pct=ba,
        order_delta_pct=None if ab is None or ba is None else ab - ba,
        retained=len(kept),
    )


def verdict(x: Crossover, cfg: MixedConfig, min_phase_n: int, phase_n: int) -> tuple[Verdict, str]:
    if x.retained < MIN_RETAINED or x.paired_median_pct is None:
        return Verdict.INCONCLUSIVE, f"{x.retained} retained rounds < {MIN_RETAINED}"
    if phase_n < min_phase_n:
        return Verdict.INCONCLUSIVE, f"{phase_n} short requests per phase < {min_phase_n}"
    med = x.paired_median_pct
    if x.direction_consistency is not None and x.direction_consistency < cfg.min_direction_consistency:
        return Verdict.UNSTABLE, (
            f"direction consistency {x.direction_consistency:.0%} < {cfg.min_direction_consistency:.0%}: "
            "rounds disagree on whether mixing slows short requests"
        )
    delta = x.order_delta_pct
    if delta is not None and abs(delta) > cfg.order_delta_limit_pct and abs(delta) > abs(med):
        return Verdict.REVIEW_REQUIRED, (
            f"order effect AB-BA {delta:+.1f} pts exceeds the paired median {med:+.1f}%: order dominates"
        )
    if med < -cfg.max_speedup_pct:
        return Verdict.REVIEW_REQUIRED, (
            f"short requests were {-med:.1f}% faster with long prefills running (limit {cfg.max_speedup_pct:g}%): "
            "interference cannot speed them up, so warm-up, host scheduling or caching dominates"
        )
    if med > cfg.max_degradation_pct:
        return Verdict.FAIL, f"paired median degradation {med:+.1f}% > {cfg.max_degradation_pct:g}%"
    return Verdict.PASS, f"paired median degradation {med:+.1f}% <= {cfg.max_degradation_pct:g}%"
