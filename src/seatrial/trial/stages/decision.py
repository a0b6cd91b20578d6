"""Stage 6, the decision and production profile: per profile, the candidate that carries the peak within the SLO
at the least cost, from the capacity lower bounds: replicas = ceil(peak / capacity bound), GPUs = replicas x the
candidate's, the concurrency quota per replica by Little's law (rate per replica x the mean E2E at the capacity of
its slowest start, rounded up), USD per 1M output tokens at that start's capacity (``capacity.cost``'s figures). Two candidates whose capacities the starts
do not tell apart (experiment's rule: Welch's t on the log capacities, each start's search bracket its measurement
error; the interval of the ratio holding 1) are both named."""

from __future__ import annotations

import math
from typing import Any

from seatrial.runs.summaries.trial import ProfileRow
from seatrial.trial.context import Outcome, TrialContext
from seatrial.trial.plan import Profile


def run(ctx: TrialContext) -> Outcome:
    rows = ctx.data("capacity").get("rows", {})
    profiles = [_profile(ctx, p, {c: r[p.name] for c, r in rows.items() if p.name in r}) for p in ctx.plan.profiles]
    data = {"profiles": [p.to_json() for p in profiles]}
    if missing := [p.profile for p in profiles if p.candidate is None]:
        return Outcome("FAIL", f"no candidate carries {', '.join(missing)}", data, 1)
    picks = "; ".join(f"{p.profile}: {p.candidate} x {p.replicas}" for p in profiles)
    return Outcome("PASS", picks, data)


def _profile(ctx: TrialContext, prof: Profile, per: dict[str, dict[str, Any]]) -> ProfileRow:
    gpus = {c.name: c.gpus for c in ctx.plan.candidates}
    figures = {name: _sized(prof, r, gpus[name], ctx.plan.deployment.gpu_hour_usd) for name, r in per.items()}
    held = {k: v for k, v in figures.items() if v["capacity_req_s"]}
    base = ProfileRow(profile=prof.name, candidate=None, peak_req_s=prof.peak_req_s, slo=prof.slo,
                      attainment=prof.attainment, candidates=[{"name": k, **v} for k, v in figures.items()])  # fmt: skip
    if not held:
        base.reason = "no candidate held the SLO: " + "; ".join(f"{k} {r['line']}" for k, r in per.items()) if per else "no candidate measured"
        return base
    best = min(held, key=lambda k: _cost_order(held[k]))
    apart = {k: _distinguishable(per[best], per[k], ctx.plan.stages.capacity.confidence) for k in held if k != best}
    same = [k for k, ok in apart.items() if not ok]
    reason = f"least GPUs for {prof.peak_req_s:g} req/s: {held[best]['gpus']}"
    if same:
        reason += f"; {best} and {', '.join(same)} are not distinguishable over their starts"
    if floor := _floor(per[best]):
        reason += f"; {floor}: its capacity is a floor, so {held[best]['replicas']} replicas is at most what the peak needs"
    return base.model_copy(update={"candidate": best, **{k: held[best][k] for k in _SIZED}, "reason": reason,
                                   "distinguishable_from": [k for k, ok in apart.items() if ok]})  # fmt: skip


def _cost_order(f: dict[str, Any]) -> tuple[float, float, float]:
    """The least cost first: fewest GPUs (the hourly cost), then the most capacity (headroom), then the least
    USD per 1M output tokens."""
    usd = f["usd_per_1m_output_tokens"]
    return (f["gpus"], -f["capacity_req_s"], usd if usd is not None else math.inf)


def _floor(r: dict[str, Any]) -> str:
    """Which starts' searches never saw a load the SLO did not hold (no probe MISSED: their time budget ran out,
    or every probe up to the highest allowed met); '' where every search found a load that broke it."""
    ended = [s["start"] for s in r["starts"] if s.get("bound") and s["bound"].get("first_failing_rate_req_s") is None]
    if not ended:
        return ""
    which = f"start {ended[0]}" if len(ended) == 1 else f"starts {', '.join(map(str, ended[:-1]))} and {ended[-1]}"
    return f"the search of {which} ended before any probe was shown to break the SLO (none MISSED)"


_SIZED = ("capacity_req_s", "capacity_starts", "replicas", "gpus", "concurrency_quota", "usd_per_1m_output_tokens")


def _sized(prof: Profile, r: dict[str, Any], gpus: int, gpu_hour_usd: float | None) -> dict[str, Any]:
    """The profile at the replica's bound (capacity.cost's production profile), Little's law and the cost per
    token at the probe its slowest start held."""
    from seatrial.capacity.cost import LAYOUT, cost, production_profile
    from seatrial.runs.summaries.capacity import Capacity, Probe

    cap = r["capacity"]
    measured = [s for s in r["starts"] if s["capacity"] is not None and s.get("probe")]
    out: dict[str, Any] = dict.fromkeys(_SIZED) | {"capacity_req_s": cap, "capacity_starts": len(measured)}
    if not cap or not measured:
        return out
    slowest = min(measured, key=lambda s: s["capacity"])
    bound = Capacity.model_validate(slowest["bound"]).model_copy(update={"rate_req_s": cap})
    probe = Probe.model_validate(slowest["probe"])
    made = production_profile(bound, probe, prof.peak_req_s, dict.fromkeys(LAYOUT), gpus, gpu_hour_usd)
    quota = made.concurrency_per_replica
    return out | {"replicas": made.replicas, "gpus": made.gpus, "concurrency_quota": math.ceil(quota) if quota else None,
                  "usd_per_1m_output_tokens": cost(probe, gpus, gpu_hour_usd).usd_per_1m_output_tokens if gpu_hour_usd else None}  # fmt: skip


def _distinguishable(a: dict[str, Any], b: dict[str, Any], confidence: float) -> bool:
    """Whether two candidates' capacities differ over their starts (an interval of the log ratio that excludes 0)."""
    from seatrial.stats.effects import bracket_variance, welch_log

    caps_a, caps_b = ([s["capacity"] for s in r["starts"] if s["capacity"]] for r in (a, b))
    var_a, var_b = (bracket_variance((s["capacity"], s.get("upper")) for s in r["starts"]) for r in (a, b))
    lo, hi = welch_log(caps_a, caps_b, True, confidence, (var_a, var_b)).ci_pct
    return lo is not None and hi is not None and (lo > 0 or hi < 0)

