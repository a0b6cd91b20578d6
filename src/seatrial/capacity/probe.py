"""One capacity probe: the load offered as bench offers it (a level with its warm-up and validity gate),
judged by the share of good requests and its interval.

- Size: the first run sends :func:`requests_for` requests, enough for the interval's lower bound to clear
  the target when the true attainment lies halfway between the target and 1 and outcomes are independent.
  An INCONCLUSIVE probe (the interval straddles the target) gets another run at the same load, of what
  that size needs at the design effect measured so far (at least the first run's size), up to
  ``max_requests``; every run's requests are pooled.
- Clusters: each run's requests are cut into consecutive batches in send order, each twice the good/bad
  series' correlation time long (requests that shared the server's queue are not independent;
  :func:`seatrial.stats.proportions.data_batches`), and that correlation time is the least design effect
  of the cluster-aware Wilson interval. That time is at least a multiple of the others the run held in
  flight (:func:`seatrial.stats.proportions.least_correlation`): 5 x for an open loop (a queue fed at a
  rate keeps outcomes alike for several lifetimes, and a short series cannot see it), 0.5 x for a closed
  one (its users wait for their answers: benchmarks/attainment_coverage.py measures both).
- Verdict: MEETS when the lower bound is at least the target, MISSES when the upper bound is below it,
  INCONCLUSIVE otherwise; INVALID when a run failed bench's validity gate twice (the client fell behind,
  or the delivered rate was off). A failed request is a request that was not good, never invalidity.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from seatrial.load.bench import LevelOutcome
from seatrial.load.goodput import SLO_METRICS, is_good
from seatrial.load.records import RequestRecord
from seatrial.runs.summaries.base import Distribution
from seatrial.runs.summaries.capacity import Probe, ProbeServer, ProbeVerdict
from seatrial.stats import distribution
from seatrial.stats.proportions import Share, data_batches, least_correlation, share_ci, wilson

MIN_REQUESTS = 10

#: runs one level at ``load`` with ``requests`` measured requests
RunLevel = Callable[[float, int], Awaitable[LevelOutcome]]


def requests_for(target: float, confidence: float) -> int:
    """Fewest requests whose Wilson lower bound clears ``target`` at an attainment halfway to 1."""
    p = (1 + target) / 2
    n = MIN_REQUESTS
    while wilson(p * n, n, confidence)[0] < target and n < 100_000:
        n += max(1, n // 20)
    return n


@dataclass
class ProbeJudgement:
    share: Share
    verdict: ProbeVerdict


def judge(
    runs: list[list[RequestRecord]],
    slo: dict[str, float],
    target: float,
    confidence: float,
    floors: list[float] | None = None,
) -> ProbeJudgement:
    """The probe's share of good requests over its runs, each cut into batches of its own correlation time,
    at least its run's floor (``floors``: :func:`least_correlation` of what each run held in flight)."""
    good, total, taus = [], [], [1.0]
    for i, records in enumerate(runs):
        ordered = sorted(records, key=lambda r: r.sent_ms)
        g, t, tau = data_batches([is_good(r, slo) for r in ordered], floors[i] if floors else 1.0)
        good += g
        total += t
        taus.append(tau)
    share = share_ci(good, total, confidence, min_deff=max(taus))
    lo, hi = share.ci
    verdict: ProbeVerdict = "MEETS" if lo >= target else "MISSES" if hi < target else "INCONCLUSIVE"
    return ProbeJudgement(share, verdict)


async def probe(
    run_level: RunLevel,
    load: float,
    rate_mode: bool,
    slo: dict[str, float],
    target: float,
    confidence: float,
    first: int,
    most: int,
) -> Probe:
    """Runs at ``load`` until the interval decides, the requests reach ``most``, or a run is invalid twice."""
    outcomes: list[LevelOutcome] = []
    invalid: list[LevelOutcome] = []
    judged: ProbeJudgement | None = None
    while (used := sum(len(o.records) for o in outcomes)) < most:
        # the next run: what the interval needs at the design effect seen so far, at least ``first``
        need = math.ceil(first * judged.share.deff) - used if judged else first
        outcome = await run_level(load, min(max(first, need), most - used))
        if not outcome.summary.valid:
            invalid.append(outcome)
            if len(invalid) >= 2:
                break
            continue
        outcomes.append(outcome)
        floors = [least_correlation(o.summary.delivery.mean_in_flight, rate_mode) for o in outcomes]
        judged = judge([o.records for o in outcomes], slo, target, confidence, floors)
        if judged.verdict != "INCONCLUSIVE":
            break
    return _probe(load, rate_mode, slo, outcomes, invalid, judged)


def _probe(
    load: float,
    rate_mode: bool,
    slo: dict[str, float],
    outcomes: list[LevelOutcome],
    invalid: list[LevelOutcome],
    judged: ProbeJudgement | None,
) -> Probe:
    records = [r for o in outcomes for r in o.records]
    ok = [r for r in records if r.ok]
    valid = judged is not None and len(invalid) < 2
    reasons = [f"L{o.summary.index}: {'; '.join(o.summary.invalid_reasons)}" for o in invalid]
    share = judged.share if judged else None
    duration = sum(o.summary.duration_s for o in outcomes)
    levels = [o.summary for o in outcomes]
    return Probe(
        rate_req_s=load if rate_mode else None,
        concurrency=None if rate_mode else round(load),
        requests=len(records),
        good=share.successes if share else 0,
        attainment=share.share if share else None,
        attainment_ci=list(share.ci) if share else [0.0, 1.0],
        n_eff=share.n_eff if share else 0.0,
        method=share.method if share else "none",
        verdict=judged.verdict if judged and valid else "INVALID",
        valid=valid,
        invalid_reasons=reasons,
        runs=len(outcomes) + len(invalid),
        levels=[o.summary.index for o in (*invalid, *outcomes)],
        ttft_ms=_dist([r.ttft_ms for r in ok]),
        tpot_ms=_dist([r.tpot_ms for r in ok]),
        e2e_ms=_dist([r.e2e_ms for r in ok]),
        output_tok_s=sum(r.output_tokens or 0 for r in ok) / duration if duration > 0 else None,
        achieved_rate_req_s=_mean([lv.delivery.achieved_rate for lv in levels]),
        delivered_rate_req_s=_mean([o.summary.delivery.achieved_rate for o in invalid]) if not valid else None,
        mean_in_flight=_mean([lv.delivery.mean_in_flight for lv in levels]),
        missed_by=missed_by(records, slo),
        server=_server(outcomes),
    )


def missed_by(records: list[RequestRecord], slo: dict[str, float]) -> dict[str, int]:
    """How many requests failed, and broke each bound (a request may break several)."""
    out = {"failed": sum(not r.ok for r in records)}
    for name in SLO_METRICS:
        if name in slo:
            out[name] = sum(
                1 for r in records if r.ok and (v := getattr(r, name)) is not None and v > slo[name]
            )
    return out


def _dist(values: list[float | None]) -> Distribution:
    return Distribution.model_validate(distribution([v for v in values if v is not None]))


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _server(outcomes: list[LevelOutcome]) -> ProbeServer:
    views = [o.summary.server for o in outcomes]

    def top(name: str) -> float | None:
        vals = [v for s in views if (v := getattr(s, name)) is not None]
        return max(vals) if vals else None

    preempt = [s.preemptions for s in views if s.preemptions is not None]
    return ProbeServer(
        running_max=top("running_max"),
        waiting_max=top("waiting_max"),
        kv_cache_usage_max=top("kv_cache_usage_max"),
        preemptions=sum(preempt) if preempt else None,
    )
