"""``saturation``: a concurrency ladder, extended while it still tells something, classified.

Each step is a ``seatrial bench`` level of ``max(min_requests, requests_per_user x C)`` requests.
The ladder stops when a step fails or is not delivered, or once a saturation class has held for one
more step; when the listed rungs run out unsaturated it grows by ``extend_factor`` up to
``max_concurrency``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from seatrial.load.config import WorkloadConfig
from seatrial.load.level import LevelOutcome
from seatrial.load.validity import MIN_IN_FLIGHT_SHARE
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import Verdict
from seatrial.stats import min_samples, percentile_ci
from seatrial.trials.configs import Slo
from seatrial.trials.env import TrialEnv, observed, ok_values
from seatrial.trials.saturation_rules import (
    SaturationConfig,
    Step,
    classify,
    first_unmet,
    kv_pressure_began,
    max_executable,
    max_slo,
    saturated,
)


def ladder(cfg: SaturationConfig) -> Iterator[int]:
    last = 0
    for c in cfg.ladder:
        if c > cfg.max_concurrency:
            return
        last = c
        yield c
    while (c := math.ceil(last * cfg.extend_factor)) <= cfg.max_concurrency:
        last = c
        yield c


def to_step(outcome: LevelOutcome, slo: Slo, max_lag_ms: float) -> tuple[Step, dict[str, Any]]:
    s, srv = outcome.summary, outcome.summary.server
    ttft = percentile_ci(ok_values(outcome.records, "ttft_ms"), slo.percentile)
    itls = [x for r in outcome.records if r.ok for x in r.itl_ms]
    itl = percentile_ci(itls, slo.percentile) if itls else None
    n = len(outcome.records)
    lag = s.delivery.lag_ms_p99
    delivered = s.delivery.mean_in_flight >= MIN_IN_FLIGHT_SHARE * min(s.concurrency, n) and (
        lag is None or lag <= max_lag_ms
    )
    step = Step(
        concurrency=s.concurrency,
        requests=n,
        requests_failed=s.requests_failed,
        output_tok_s=s.output_tok_s,
        ttft_ms_p99=s.ttft_ms.p99,
        ttft_ms_slo=ttft.value,
        ttft_ms_slo_low=ttft.ci_low,
        ttft_ms_slo_high=ttft.ci_high,
        itl_ms_slo=itl.value if itl else None,
        itl_ms_slo_high=itl.ci_high if itl else None,
        running_max=srv.running_max,
        waiting_max=srv.waiting_max,
        kv_cache_usage_max=srv.kv_cache_usage_max,
        preemptions=srv.preemptions,
        delivered=delivered,
        enough_samples=ttft.enough,
    )
    extra = {
        "index": s.index,  # its requests are L<index>-* in requests.jsonl
        "ttft_ms_slo_n": ttft.n,
        "ttft_ms_p50": s.ttft_ms.p50,
        "itl_ms_p50": s.itl_ms.p50,
        "itl_ms_p99": s.itl_ms.p99,
        "mean_in_flight": s.delivery.mean_in_flight,
        "invalid_reasons": s.invalid_reasons,
        **observed(s),
    }
    return step, extra


def verdict(steps: list[Step], cls: str, cfg: SaturationConfig, slo: Slo) -> tuple[Verdict, list[str]]:
    need = min_samples(slo.percentile)
    if steps and steps[0].requests_failed:
        first = steps[0]
        return Verdict.FAIL, [
            f"C={first.concurrency}: {first.requests_failed} of {first.requests} requests failed"
        ]
    small = [s.concurrency for s in steps if not s.enough_samples]
    if not steps or small:
        return Verdict.INCONCLUSIVE, [
            f"steps {small} have fewer than {need} requests for TTFT p{slo.percentile:g}"
        ]
    if cls == "CLIENT_BOUND":
        return Verdict.INCONCLUSIVE, ["the client did not deliver the load; the server was not measured"]
    best, unmet = max_slo(steps, slo), first_unmet(steps, slo)
    words = f"TTFT p{slo.percentile:g} <= {slo.ttft_ms:,.0f} ms"
    target = cfg.target_concurrency
    if target and best is not None and best >= target:
        return Verdict.PASS, [
            f"serves C={best} within the SLO ({words}, the whole 95% interval), target {target}"
        ]
    if unmet is not None and unmet[1] == "STRADDLES":
        s = unmet[0]
        return Verdict.INCONCLUSIVE, [
            f"C={s.concurrency}: the 95% interval of TTFT p{slo.percentile:g} [{_ms(s.ttft_ms_slo_low)}, "
            f"{_ms(s.ttft_ms_slo_high)}] ms straddles the SLO {slo.ttft_ms:,.0f} ms; more requests per step decide it"
        ]
    if best is None:
        return Verdict.FAIL, [f"no step met the SLO ({words})"]
    if target and best < target:
        return Verdict.FAIL, [f"max SLO concurrency {best} < target {target}"]
    return Verdict.PASS, [f"serves C={best} within the SLO ({words}, the whole 95% interval)"]


def _ms(v: float | None) -> str:
    return "unknown" if v is None else f"{v:,.0f}"


async def run(env: TrialEnv) -> TrialResult:
    cfg, slo = env.profile.config(SaturationConfig), env.profile.slo
    wl = WorkloadConfig(name="random", input_len=cfg.input_len, output_len=cfg.output_len)
    steps: list[Step] = []
    rows: list[dict[str, Any]] = []
    held = False
    for c in ladder(cfg):
        outcome = await env.level(wl, c, max(cfg.min_requests, cfg.requests_per_user * c), cfg.warmup)
        step, extra = to_step(outcome, slo, env.profile.max_lag_ms)
        steps.append(step)
        rows.append(step.model_dump() | extra)
        now = saturated(classify(steps, cfg, slo)[0])
        if step.requests_failed or not step.delivered or (now and held):
            break
        held = now
    cls, why = classify(steps, cfg, slo)
    v, reasons = verdict(steps, cls, cfg, slo)
    exe, best = max_executable(steps), max_slo(steps, slo)
    return TrialResult(
        name="saturation",
        verdict=v,
        classification=cls,
        reasons=[why, *reasons],
        samples={f"C={s.concurrency}": s.requests for s in steps},
        max_executable_concurrency=exe,
        max_slo_concurrency=best,
        evidence={
            "steps": rows,
            "slo": slo.model_dump(),
            "max_executable_concurrency": exe,
            "max_slo_concurrency": best,
            "kv_pressure_concurrency": kv_pressure_began(steps, cfg),
        },
    )
