"""One capacity probe: the load offered as bench offers it (a level with its warm-up and validity gate),
judged by the share of good requests and its interval, look after look (capacity.looks: the sizes, the
batches, alpha spending over the looks).

- Verdict: MEETS, MISSES or INCONCLUSIVE from the last look; INVALID when a run failed bench's validity
  gate twice (the client fell behind, or the delivered rate was off). A failed request is a request that
  was not good, never invalidity. An invalid run is no look.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from seatrial.capacity.looks import Looks, requests_to_meet
from seatrial.load.goodput import SLO_METRICS, is_good
from seatrial.load.level import LevelOutcome
from seatrial.load.records import RequestRecord
from seatrial.runs.summaries.base import Distribution
from seatrial.runs.summaries.capacity import Probe, ProbeServer
from seatrial.stats import distribution

#: runs one level at ``load`` with ``requests`` measured requests
RunLevel = Callable[[float, int], Awaitable[LevelOutcome]]


def outcomes(records: list[RequestRecord], slo: dict[str, float]) -> list[bool]:
    """Whether each request was good, in send order."""
    return [is_good(r, slo) for r in sorted(records, key=lambda r: r.sent_ms)]


async def probe(run_level: RunLevel, load: float, slo: dict[str, float], looks: Looks) -> Probe:
    """Runs at ``load`` until ``looks`` decides or spends its budget, or a run is invalid twice."""
    done: list[LevelOutcome] = []
    invalid: list[LevelOutcome] = []
    while size := looks.next_size():
        outcome = await run_level(load, size)
        if not outcome.summary.valid:
            invalid.append(outcome)
            if len(invalid) >= 2:
                break
            continue
        done.append(outcome)
        window = outcome.summary.window
        overloaded = window is not None and window.overloaded
        held = window.in_flight if window is not None else None
        looks.add(outcomes(outcome.records, slo), outcome.summary.delivery.mean_in_flight, overloaded, held)
    return _probe(load, slo, done, invalid, looks)


def _probe(
    load: float, slo: dict[str, float], outcomes: list[LevelOutcome], invalid: list[LevelOutcome], looks: Looks
) -> Probe:
    rate_mode, judged = looks.open_loop, looks.judged
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
        method=_method(looks) if share else "none",
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
        overloaded=looks.overloaded,
        held_in_flight=round(looks.in_flight, 2) if outcomes else None,
        short=looks.short,
        needs_requests=_needs(looks) if valid else None,
    )


def _needs(looks: Looks) -> int | None:
    judged = looks.judged
    if judged is None or judged.verdict != "INCONCLUSIVE":
        return None
    return requests_to_meet(judged.share, looks.target, looks.look_confidence(len(looks.runs) + 1))


def _method(looks: Looks) -> str:
    assert looks.judged is not None
    n = len(looks.runs)
    return f"{looks.judged.share.method}; look {n} at {looks.look_confidence(n):.4g} (alpha spending)"


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
