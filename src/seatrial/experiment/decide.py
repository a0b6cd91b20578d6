"""Per setting and level, what the starts measured; per treatment and profile, the decision.

A start's level enters only when ``seatrial bench`` found it valid; invalid levels are listed with
their reasons. Throughputs are one value per start; request-level metrics are pooled over the starts'
requests (never an average of per-start percentiles).

Verdicts (threshold = the larger of the profile's ``min_gain_pct`` and the A/A spread):
ADOPT      the whole interval of the gain lies above +threshold and every guardrail is non-inferior
REJECT     the whole interval lies below -threshold, or a guardrail is clearly worse
NO_EFFECT  the whole interval lies inside +-threshold
INCONCLUSIVE anything else (with how many starts would settle it)
A/A spread: the baseline's own starts split into two interleaved halves (in run order), the absolute
gain of one half over the other; an explicit A/A treatment (identical to the baseline) counts too.
"""

from __future__ import annotations

from typing import Any

from seatrial.experiment.plan import THROUGHPUTS, ExperimentPlan, Guardrail
from seatrial.stats.effects import (
    Effect,
    pooled_effect,
    pooled_stat,
    spread,
    starts_needed,
    welch_log,
    within_sd,
)

Level = dict[str, Any]  # one valid level of one start: its summary plus "records" (request values by metric)


def metric_values(levels: list[Level], metric: str) -> tuple[list[float], list[list[float]]]:
    """Per start: the level's value of ``metric`` (throughputs and per-start statistics), and the
    request values behind it (request-level metrics)."""
    base, _, stat = metric.partition(".")
    if base in THROUGHPUTS:
        return [lv[base] for lv in levels if lv.get(base)], []
    starts = [lv["values"].get(base, []) for lv in levels]
    per_start = [v for s in starts if s and (v := pooled_stat([s], stat)) is not None]
    return per_start, starts


def effect(
    base: list[Level], treat: list[Level], metric: str, higher_is_better: bool, confidence: float, seed: int
) -> Effect:
    a_vals, a_starts = metric_values(base, metric)
    b_vals, b_starts = metric_values(treat, metric)
    if metric.partition(".")[0] in THROUGHPUTS:
        return welch_log(a_vals, b_vals, higher_is_better, confidence)
    stat = metric.partition(".")[2]
    return pooled_effect(a_starts, b_starts, stat, higher_is_better, confidence, seed)


def aa_spread(base: list[Level], metric: str, higher_is_better: bool, confidence: float) -> float | None:
    """|gain| of the baseline's odd-numbered starts (in run order) over its even-numbered ones."""
    if len(base) < 2:
        return None
    halves = base[0::2], base[1::2]
    e = effect(halves[0], halves[1], metric, higher_is_better, confidence, seed=1)
    return abs(e.gain_pct) if e.gain_pct is not None else None


def guardrail(base: list[Level], treat: list[Level], g: Guardrail, confidence: float) -> dict[str, Any]:
    """Non-inferiority: the change in the bad direction must stay within ``margin_pct``."""
    e = effect(base, treat, g.metric, g.better_higher, confidence, seed=2)
    lo, hi = e.ci_pct
    if lo is not None and lo > -g.margin_pct:
        status = "NON_INFERIOR"
    elif hi is not None and hi < -g.margin_pct:
        status = "WORSE"
    else:
        status = "UNDECIDED"
    return {"metric": g.metric, "margin_pct": g.margin_pct, "gain_pct": e.gain_pct, "ci_pct": [lo, hi],
            "method": e.method, "status": status}  # fmt: skip


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
    plan: ExperimentPlan, levels: dict[str, dict[int, list[Level]]], aa: dict[str, bool]
) -> list[dict[str, Any]]:
    """One decision per treatment and profile; ``levels[setting][concurrency]`` are the valid levels of
    that setting's starts in run order; ``aa[name]`` marks an A/A control."""
    cfg = plan.decide
    out = []
    base_name = plan.baseline.name
    for name, prof in cfg.profiles.items():
        base = levels.get(base_name, {}).get(prof.concurrency, [])
        floors = [aa_spread(base, prof.metric, prof.better_higher, cfg.confidence)]
        for t in plan.treatments:
            if aa.get(t.name):
                e = effect(base, levels.get(t.name, {}).get(prof.concurrency, []), prof.metric,
                           prof.better_higher, cfg.confidence, seed=3)  # fmt: skip
                floors.append(abs(e.gain_pct) if e.gain_pct is not None else None)
        floor = max((f for f in floors if f is not None), default=None)
        threshold = max(prof.min_gain_pct, floor or 0.0)
        for t in plan.treatments:
            treat = levels.get(t.name, {}).get(prof.concurrency, [])
            e = effect(base, treat, prof.metric, prof.better_higher, cfg.confidence, seed=0)
            guards = [guardrail(base, treat, g, cfg.confidence) for g in cfg.guardrails]
            verdict = word(e.ci_pct, threshold, guards)
            out.append(
                {
                    "treatment": t.name,
                    "aa_control": aa.get(t.name, False),
                    "profile": name,
                    "concurrency": prof.concurrency,
                    "verdict": verdict,
                    "metric": prof.metric,
                    "higher_is_better": prof.better_higher,
                    "gain_pct": e.gain_pct,
                    "ci_pct": list(e.ci_pct),
                    "method": e.method,
                    "confidence": cfg.confidence,
                    "threshold_pct": threshold,
                    "min_gain_pct": prof.min_gain_pct,
                    "aa_spread_pct": floor,
                    "guardrails": guards,
                    "starts": {"baseline": e.n_a, "treatment": e.n_b},
                    "power_starts_needed": None
                    if verdict in ("ADOPT", "REJECT", "NO_EFFECT")
                    else starts_needed(e.gain_pct, threshold, e.sd_log, cfg.confidence),
                }
            )
    return out


def level_stats(starts: list[Level], metrics: tuple[str, ...]) -> dict[str, Any]:
    """Per metric over one setting's valid starts at one level: per-start values, their mean,
    between-start SD and CV, within-start SD (request-level metrics) and the pooled tails with n."""
    out: dict[str, Any] = {}
    for metric in metrics:
        per_start, requests = metric_values(starts, metric)
        row: dict[str, Any] = {"per_start": per_start, **spread(per_start)}
        if requests:
            base = metric.partition(".")[0]
            row["within_start_sd"] = within_sd(requests)
            row["pooled"] = pooled_stat(requests, metric.partition(".")[2])
            row["pooled_n"] = sum(len(s) for s in requests)
            row["metric"] = base
        out[metric] = row
    return out
