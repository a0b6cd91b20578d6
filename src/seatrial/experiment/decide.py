"""Per setting and level, what the starts measured; per treatment and profile, the decision.

A start's level enters only when ``seatrial bench`` found it valid; invalid levels are listed with
their reasons. Every metric is one value per start (a throughput, or the start's own statistic of its
requests: ``ttft_ms.p99`` is the p99 of that start's TTFTs), compared by Welch's t on the logs
(``welch-log-per-start``, docs/statistics.md). A level whose client stalled (loop lag p99 above
``max_lag_ms``) counts for throughput but not for the request timings.

Verdicts (threshold = the profile's ``min_gain_pct``), from the interval at the confidence Holm's
procedure gives the decision among the treatments x profiles that can be decided:
ADOPT        the whole interval of the gain lies above +threshold and every guardrail is non-inferior
REJECT       the whole interval lies below -threshold, or a guardrail is clearly worse
NO_EFFECT    the whole interval lies inside +-threshold
INCONCLUSIVE anything else, and whatever a reason blocks: a failed start of either setting (unless
             ``allow_failed_starts``), fewer than 2 starts a side, a pooled percentile without its
             ``min_samples``, a between-start SD below the resolution
INVALID      every decision of a profile whose A/A check failed (see :mod:`seatrial.experiment.checks`)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seatrial.experiment.checks import aa_checks, drift, failed_starts, usable
from seatrial.experiment.plan import ExperimentPlan, Guardrail
from seatrial.experiment.values import Level, effect, flat, per_start, pooled_n, shortfall
from seatrial.stats.effects import POWER, Effect, holm_levels, power_starts, spread, within_sd
from seatrial.stats.effects import statistic as stat_of

UNRESOLVED = (
    "between-start SD of the logs {sd} is below the resolution 1e-4: no fresh start repeats a measurement "
    "that closely (copies, quantised values, or one measurement read twice), so it is no evidence"
)


def guardrail(base: list[Level], treat: list[Level], g: Guardrail, confidence: float) -> dict[str, Any]:
    """Non-inferiority: the change in the bad direction must stay within ``margin_pct`` (one-sided, at
    the plan's level: the lower end of the two-sided interval)."""
    a, out_a = usable(base, g.metric)
    b, out_b = usable(treat, g.metric)
    e = effect(a, b, g.metric, g.better_higher, confidence)
    lo, hi = e.ci_pct
    reasons = out_a + out_b
    blocked = blockers(e, a, b, g.metric)
    if blocked:
        status, reasons = "UNDECIDED", reasons + blocked
    elif lo is not None and lo > -g.margin_pct:
        status = "NON_INFERIOR"
    elif hi is not None and hi < -g.margin_pct:
        status = "WORSE"
    else:
        status = "UNDECIDED"
    return {"metric": g.metric, "margin_pct": g.margin_pct, "gain_pct": e.gain_pct, "ci_pct": [lo, hi],
            "method": e.method, "starts": [e.n_a, e.n_b], "status": status, "reasons": reasons}  # fmt: skip


def blockers(e: Effect, a: list[Level], b: list[Level], metric: str) -> list[str]:
    """What keeps an effect from a verdict: too few samples for its percentile, too few starts, no spread."""
    out = []
    if (short := shortfall(a, b, metric)) is not None:
        out.append(short)
    if min(e.n_a, e.n_b) < 2:
        out.append(f"{e.n_a}+{e.n_b} starts: an interval needs 2 starts a side")
    elif not e.resolved:
        out.append(UNRESOLVED.format(sd=f"{e.sd_log:.1e}"))
    return out


def word(ci: tuple[float | None, float | None], threshold: float, guards: list[dict[str, Any]]) -> str:
    lo, hi = ci
    if any(g["status"] == "WORSE" for g in guards):
        return "REJECT"
    if lo is None or hi is None:
        return "INCONCLUSIVE"
    if lo > threshold and all(g["status"] == "NON_INFERIOR" for g in guards):
        return "ADOPT"
    if hi < -threshold:
        return "REJECT"
    if -threshold < lo and hi < threshold:
        return "NO_EFFECT"
    return "INCONCLUSIVE"


def decisions(
    plan: ExperimentPlan,
    levels: dict[str, dict[int, list[Level]]],
    aa: dict[str, bool],
    failures: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """One decision per treatment and profile, the A/A checks, the drift per profile and the correction
    used. ``levels[setting][concurrency]`` are the valid levels of that setting's starts in run order
    (each with ``start``, ``slot``, ``stalled``); ``aa[name]`` marks an A/A control; ``failures[setting]``
    lists its starts that did not come up (``concurrency`` None) or measured an INVALID level."""
    cfg = plan.decide
    checks = aa_checks(plan, levels, aa)
    rows: list[dict[str, Any]] = []
    effects: list[Effect] = []
    for name in cfg.profiles:
        moved = [c for c in checks if c["profile"] == name and c["status"] in ("MOVED", "LEAVES_MIN_GAIN")]
        for t in plan.treatments:
            row, e = _row(plan, name, t.name, levels, aa.get(t.name, False), failures or {})
            if moved:
                row["invalid"] = [f"A/A check {c['check']}: {c['reason']}" for c in moved]
            rows.append(row)
            effects.append(e)
    family = _holm(rows, effects, cfg.confidence)
    for row in rows:
        row["verdict"] = (
            "INVALID"
            if row.get("invalid")
            else "INCONCLUSIVE"
            if row["reasons"]
            else word((row["ci_pct"][0], row["ci_pct"][1]), row["threshold_pct"], row["guardrails"])
        )
    return {"decisions": rows, "aa_checks": checks, "drift": drift(plan, levels),
            "multiplicity": _multiplicity(family, cfg.confidence, len(checks))}  # fmt: skip


def _row(
    plan: ExperimentPlan,
    profile: str,
    treatment: str,
    levels: dict[str, dict[int, list[Level]]],
    aa_control: bool,
    failures: dict[str, list[dict[str, Any]]],
) -> tuple[dict[str, Any], Effect]:
    cfg, prof = plan.decide, plan.decide.profiles[profile]
    c, base_name, key = prof.at, plan.baseline.name, prof.key(profile)
    base_all, treat_all = levels.get(base_name, {}).get(c, []), levels.get(treatment, {}).get(c, [])
    base, out_a = usable(base_all, key)
    treat, out_b = usable(treat_all, key)
    e = effect(base, treat, key, prof.better_higher, cfg.confidence)
    # a capacity is already held to its SLO: the guardrails (metrics of a measured level) guard the others
    guards = [] if prof.capacity is not None else [guardrail(base_all, treat_all, g, cfg.confidence) for g in cfg.guardrails]
    failed = failed_starts(failures, (base_name, treatment), c)
    reasons = [] if plan.allow_failed_starts or not failed else [
        f"failed starts ({'; '.join(failed)}): at most INCONCLUSIVE (allow_failed_starts: true decides "
        "from the other starts)"
    ]  # fmt: skip
    reasons += blockers(e, base, treat, key)
    if prof.capacity is not None and (out_a or out_b):  # as capacity --starts: never dropped
        reasons.append(f"{len(out_a) + len(out_b)} start(s) without a capacity count as below their lowest probe, "
                       "not as absent: the capacities cannot be compared on the others alone")  # fmt: skip
    n_power, sd_upper = power_starts(prof.min_gain_pct, e.sd_log, e.n_a + e.n_b - 2, cfg.confidence)
    row = {
        "treatment": treatment, "aa_control": aa_control, "profile": profile, "concurrency": c,
        "verdict": None, "metric": prof.metric, "key": key, "higher_is_better": prof.better_higher,
        "gain_pct": e.gain_pct, "ci_pct": list(e.ci_pct), "method": e.method,
        "confidence": cfg.confidence, "plan_confidence": cfg.confidence, "holm": None,
        "threshold_pct": prof.min_gain_pct, "min_gain_pct": prof.min_gain_pct, "guardrails": guards,
        "starts": {"baseline": e.n_a, "treatment": e.n_b},
        "pooled_n": {"baseline": pooled_n(base, key), "treatment": pooled_n(treat, key)},
        "sd_log": e.sd_log, "reasons": reasons, "excluded": out_a + out_b, "failed_starts": failed,
        "power_starts_needed": n_power,
        "power": {"starts_per_setting": n_power, "sd_log": e.sd_log, "sd_log_upper": sd_upper,
                  "power": POWER, "label": "rough power estimate"},
    }  # fmt: skip
    return row, e


def _holm(rows: list[dict[str, Any]], effects: list[Effect], confidence: float) -> int:
    """Each decidable claim's interval at the level Holm's step-down gives it; returns the family size."""
    alpha = (1 - confidence) / 2
    pvalues = [
        e.p_beyond(r["min_gain_pct"]) if not (r["aa_control"] or r["reasons"] or r.get("invalid")) else None
        for r, e in zip(rows, effects, strict=True)
    ]
    levels = holm_levels(pvalues, alpha)
    family = sum(p is not None for p in pvalues)
    ranks = sorted(range(len(rows)), key=lambda i: (pvalues[i] is None, pvalues[i] or 0.0))
    for rank, i in enumerate(ranks[:family], start=1):
        level = levels[i]
        assert level is not None
        conf = 1 - 2 * level
        rows[i].update({"ci_pct": list(effects[i].interval(conf)), "confidence": conf,
                        "holm": {"step": rank, "family": family, "one_sided_alpha": level}})  # fmt: skip
    return family


def _multiplicity(family: int, confidence: float, checks: int) -> str:
    alpha = (1 - confidence) / 2
    return (
        f"Holm across the {family} treatment x profile decision(s) that could be decided: ADOPT/REJECT "
        f"family-wise one-sided {alpha:.1%}; guardrails one-sided non-inferiority at {alpha:.1%} each; "
        f"A/A checks Bonferroni over {checks} check(s) at 1% together"
    )


def level_stats(starts: list[Level], metrics: tuple[str, ...]) -> dict[str, Any]:
    """Per metric over one setting's valid starts at one level: per-start values, their geometric mean
    and between-start SD of the logs; for request-level metrics the within-start SD and the pooled
    statistic with its n (never an average of per-start percentiles)."""
    out: dict[str, Any] = {}
    for metric in metrics:
        values = per_start(starts, metric)
        base, _, stat = metric.partition(".")
        row: dict[str, Any] = {"per_start": values, **spread(values)}
        if stat:
            requests = [flat(lv["values"].get(base, [])) for lv in starts]
            row["within_start_sd"] = within_sd(requests)
            row["pooled"] = stat_of(np.concatenate(requests) if requests else [], stat)
            row["pooled_n"] = sum(len(r) for r in requests)
            row["geomean"] = None  # shown for per-start throughputs only
        out[metric] = row
    return out
