"""Saturation classes from a concurrency ladder (seed 004 §11-12, seed 001's TTFT blow-up).

Each class is judged on the steps the client truly delivered, in this order (first match wins,
because each earlier class explains the later ones):

KV_PRESSURE         a step shows preemptions, or KV cache usage at or above ``kv_usage_high``.
QUEUE_SATURATION    from one step to the next, the server's ``waiting`` grows while ``running``
                    stays flat (within ``RUNNING_FLAT``): added users queue instead of running.
THROUGHPUT_PLATEAU  output tok/s grows by less than ``plateau_gain`` over the best earlier step
                    while the server admits the users (no queue): the engine is compute bound.
SLO_CLIFF           TTFT at the SLO percentile jumps by ``cliff_factor`` or more from one step to the
                    next and breaks the SLO there.
CLIENT_BOUND        none of the above, and a step was not delivered (client lag or too few in
                    flight): the ladder cannot say more about the server.
NONE                no step saturated.
"""

from __future__ import annotations

import itertools
from typing import Literal

from pydantic import BaseModel, Field

from seatrial.runs.result import Classification
from seatrial.trials.configs import Slo, TrialConfig

RUNNING_FLAT = 0.10


class SaturationConfig(TrialConfig):
    ladder: list[int] = Field(default_factory=lambda: [64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048])
    requests_per_user: int = Field(2, ge=1)
    min_requests: int = Field(1000, ge=1)
    warmup: int = Field(8, ge=0)
    input_len: int = Field(1024, ge=1)
    output_len: int = Field(256, ge=2)
    extend_factor: float = Field(1.5, gt=1.0)
    max_concurrency: int = Field(4096, ge=1)
    plateau_gain: float = Field(0.10, ge=0)
    kv_usage_high: float = Field(0.95, gt=0, le=1)
    cliff_factor: float = Field(3.0, gt=1)
    target_concurrency: int | None = Field(None, ge=1)


class Step(BaseModel):
    """One measured rung of the ladder (server gauges are maxima over the step's scrapes)."""

    concurrency: int
    requests: int
    requests_failed: int
    output_tok_s: float | None
    ttft_ms_p99: float | None
    ttft_ms_slo: float | None  # TTFT at the SLO percentile (point estimate, shown)
    ttft_ms_slo_low: float | None  # its 95% interval (order statistics): decisions read these
    ttft_ms_slo_high: float | None
    itl_ms_slo: float | None
    itl_ms_slo_high: float | None = None
    running_max: float | None
    waiting_max: float | None
    kv_cache_usage_max: float | None
    preemptions: float | None
    delivered: bool
    enough_samples: bool


def _queue_grows(prev: Step, cur: Step) -> bool:
    if cur.waiting_max is None or prev.running_max is None or cur.running_max is None:
        return False
    flat = cur.running_max <= prev.running_max * (1 + RUNNING_FLAT)
    return cur.waiting_max > 0 and cur.waiting_max > (prev.waiting_max or 0) and flat


def _plateau(steps: list[Step], i: int, gain: float) -> bool:
    best = max((s.output_tok_s or 0.0) for s in steps[:i])
    return best > 0 and (steps[i].output_tok_s or 0.0) < best * (1 + gain)


def _cliff(prev: Step, cur: Step, factor: float, slo: Slo) -> bool:
    """A jump of ``factor`` between the point estimates that clearly breaks the SLO (the whole interval
    of the later step above it)."""
    if prev.ttft_ms_slo is None or cur.ttft_ms_slo is None or prev.ttft_ms_slo <= 0:
        return False
    broken = cur.ttft_ms_slo_low is not None and cur.ttft_ms_slo_low > slo.ttft_ms
    return cur.ttft_ms_slo >= factor * prev.ttft_ms_slo and broken


def kv_pressure(step: Step, cfg: SaturationConfig) -> bool:
    return (step.preemptions or 0) > 0 or (step.kv_cache_usage_max or 0) >= cfg.kv_usage_high


def kv_pressure_began(steps: list[Step], cfg: SaturationConfig) -> int | None:
    """The lowest delivered step's concurrency that showed KV pressure; None if none did."""
    hit = [s.concurrency for s in steps if s.delivered and kv_pressure(s, cfg)]
    return min(hit) if hit else None


def classify(steps: list[Step], cfg: SaturationConfig, slo: Slo) -> tuple[Classification, str]:
    """The saturation class and the sentence that names the step where it showed."""
    done = [s for s in steps if s.delivered]
    for s in done:
        if kv_pressure(s, cfg):
            return "KV_PRESSURE", (
                f"C={s.concurrency}: {s.preemptions or 0:.0f} preemptions, KV usage max "
                f"{(s.kv_cache_usage_max or 0):.0%}"
            )
    pairs = list(itertools.pairwise(done))
    for prev, cur in pairs:
        if _queue_grows(prev, cur):
            return "QUEUE_SATURATION", (
                f"C={prev.concurrency}->{cur.concurrency}: waiting {prev.waiting_max or 0:.0f}->"
                f"{cur.waiting_max:.0f} while running stayed {prev.running_max:.0f}->{cur.running_max:.0f}"
            )
    for i in range(1, len(done)):
        if _plateau(done, i, cfg.plateau_gain):
            return "THROUGHPUT_PLATEAU", (
                f"C={done[i].concurrency}: {done[i].output_tok_s or 0:,.1f} output tok/s, less than "
                f"{cfg.plateau_gain:.0%} above the best earlier step, with no queue"
            )
    for prev, cur in pairs:
        if _cliff(prev, cur, cfg.cliff_factor, slo):
            return "SLO_CLIFF", (
                f"C={prev.concurrency}->{cur.concurrency}: TTFT p{slo.percentile:g} "
                f"{prev.ttft_ms_slo:,.0f}->{cur.ttft_ms_slo:,.0f} ms (SLO {slo.ttft_ms:,.0f} ms)"
            )
    missed = [s for s in steps if not s.delivered]
    if missed:
        return "CLIENT_BOUND", f"C={missed[0].concurrency}: the client did not deliver the offered load"
    return "NONE", "no step saturated"


SloFit = Literal["MEETS", "MISSES", "STRADDLES"]


def slo_fit(step: Step, slo: Slo) -> SloFit:
    """Whether a step clearly meets the SLO (every interval's upper bound within it), clearly misses it
    (a failed request, an undelivered load, or an interval wholly above it), or cannot say (an interval
    straddles it, or its upper bound is unknown: too few samples beyond the percentile)."""
    if step.requests_failed or not step.delivered or step.ttft_ms_slo is None:
        return "MISSES"
    bounds = [(step.ttft_ms_slo_low, step.ttft_ms_slo_high, slo.ttft_ms)]
    if slo.itl_ms is not None:
        bounds.append((None, step.itl_ms_slo_high, slo.itl_ms))
    if any(low is not None and low > limit for low, _, limit in bounds):
        return "MISSES"
    if all(high is not None and high <= limit for _, high, limit in bounds):
        return "MEETS"
    return "STRADDLES"


def meets_slo(step: Step, slo: Slo) -> bool:
    return slo_fit(step, slo) == "MEETS"


def max_executable(steps: list[Step]) -> int | None:
    """Highest delivered step whose requests all completed."""
    ok = [s.concurrency for s in steps if s.delivered and s.requests_failed == 0 and s.requests > 0]
    return max(ok) if ok else None


def max_slo(steps: list[Step], slo: Slo) -> int | None:
    """Highest step such that it and every lower step clearly met the SLO (the first other step ends it)."""
    best = None
    for s in sorted(steps, key=lambda s: s.concurrency):
        if not meets_slo(s, slo):
            break
        best = s.concurrency
    return best


def first_unmet(steps: list[Step], slo: Slo) -> tuple[Step, SloFit] | None:
    """The lowest step that did not clearly meet the SLO, and how it stood."""
    for s in sorted(steps, key=lambda s: s.concurrency):
        fit = slo_fit(s, slo)
        if fit != "MEETS":
            return s, fit
    return None


def saturated(classification: Classification) -> bool:
    return classification not in ("NONE", "CLIENT_BOUND")
