"""What an experiment checks about its own measurement before it decides (docs/statistics.md).

- A/A checks, per profile: the baseline's starts split into two halves balanced against a linear drift
  (in run order A B B A A B B A ...: the 1st, 4th, 5th, 8th... against the 2nd, 3rd, 6th, 7th...), and
  every A/A control (a treatment identical to the baseline) against the baseline. A check is
  ``MOVED`` when its interval at the check level excludes 0 (the check level is 1% shared by all the
  experiment's checks, Bonferroni: each at 1 - 1%/k two-sided); an A/A control, which has a decision
  row of its own, is also ``LEAVES_MIN_GAIN`` when its interval at the plan's confidence lies wholly
  outside +-min_gain (its row would have said ADOPT or REJECT). Either makes every decision of the
  profile INVALID. ``UNCHECKED`` when there is nothing to check with (fewer than 2 starts a side, a
  percentile short of its samples, no spread).
- Failed starts: a start that did not come up, or whose level was INVALID, named per setting.
- Stalled levels: a level whose client stalled counts for throughput only (``usable``).
- Drift: the per-start log values of every setting against their run slot, one shared slope (least
  squares within settings) with its interval, and the drift that slope makes over the whole run;
  ``DRIFT`` when that interval lies wholly beyond +-min_gain, ``POSSIBLE`` when only its estimate does.
"""

from __future__ import annotations

import math
from typing import Any

from seatrial.experiment.plan import CAPACITY, DecisionProfile, ExperimentPlan, schedule
from seatrial.experiment.values import Level, effect, per_start_slots, shortfall
from seatrial.load.metric_table import LEVEL_METRICS
from seatrial.stats.effects import common_slope

AA_ALPHA = 0.01  # shared by all A/A checks of an experiment
HALVES = "baseline halves"


def usable(levels: list[Level], metric: str) -> tuple[list[Level], list[str]]:
    """The levels a metric can be decided from, and why the others are left out: a stalled client's
    request timings are its own lateness, its throughput is still what the server delivered; a start
    whose capacity search found no capacity has none to compare."""
    if metric.startswith(f"{CAPACITY}:"):
        name = metric.partition(":")[2]
        kept = [lv for lv in levels if (lv.get(CAPACITY) or {}).get(name) is not None]
        why = [f"start {lv.get('start', 0) + 1} left out of {metric}: "
               f"{(lv.get('capacity_reasons') or {}).get(name, 'no capacity search')}"
               for lv in levels if lv not in kept]  # fmt: skip
        return kept, why
    if metric.partition(".")[0] in LEVEL_METRICS:
        return levels, []
    kept = [lv for lv in levels if not lv.get("stalled")]
    out = [
        f"start {lv.get('start', 0) + 1} left out of {metric}: {lv['stalled']}"
        for lv in levels
        if lv.get("stalled")
    ]
    return kept, out


def failed_starts(
    failures: dict[str, list[dict[str, Any]]], settings: tuple[str, ...], concurrency: int
) -> list[str]:
    """The failed starts of ``settings`` that concern a level, in words."""
    return [
        f"{name} start {f['start'] + 1}: {f['reason']}"
        for name in settings
        for f in failures.get(name, [])
        if f.get("concurrency") in (None, concurrency)
    ]


def halves(levels: list[Level]) -> tuple[list[Level], list[Level]]:
    """The starts in run order split A B B A A B B A ... (a linear drift falls on both alike)."""
    first = [lv for i, lv in enumerate(levels) if i % 4 in (0, 3)]
    second = [lv for i, lv in enumerate(levels) if i % 4 in (1, 2)]
    return first, second


def aa_checks(
    plan: ExperimentPlan, levels: dict[str, dict[int, list[Level]]], aa: dict[str, bool]
) -> list[dict[str, Any]]:
    """Every A/A check of every profile (see the module docstring)."""
    pairs: list[tuple[str, DecisionProfile, str, list[Level], list[Level]]] = []
    for name, prof in plan.decide.profiles.items():
        base, _ = usable(levels.get(plan.baseline.name, {}).get(prof.at, []), prof.key(name))
        pairs.append((name, prof, HALVES, *halves(base)))
        for t in plan.treatments:
            if aa.get(t.name):
                other, _ = usable(levels.get(t.name, {}).get(prof.at, []), prof.key(name))
                pairs.append((name, prof, t.name, base, other))
    level = 1 - AA_ALPHA / max(len(pairs), 1)
    return [
        _check(name, prof, check, x, y, level, plan.decide.confidence) for name, prof, check, x, y in pairs
    ]


def _check(
    profile: str,
    prof: DecisionProfile,
    check: str,
    x: list[Level],
    y: list[Level],
    level: float,
    confidence: float,
) -> dict[str, Any]:
    key = prof.key(profile)
    e = effect(x, y, key, prof.better_higher, level)
    lo, hi = e.ci_pct
    dlo, dhi = e.interval(confidence)
    out = {"profile": profile, "check": check, "metric": prof.metric, "concurrency": prof.concurrency,
           "gain_pct": e.gain_pct, "ci_pct": [lo, hi], "confidence": level, "decision_ci_pct": [dlo, dhi],
           "starts": [e.n_a, e.n_b], "method": e.method}  # fmt: skip
    short = shortfall(x, y, key)
    g, m = e.gain_pct, prof.min_gain_pct
    if short or lo is None or hi is None or dlo is None or dhi is None or g is None:
        why = short or (f"{e.n_a}+{e.n_b} starts" if min(e.n_a, e.n_b) < 2 else "no spread between starts")
        return out | {"status": "UNCHECKED", "reason": why}
    if lo > 0 or hi < 0:
        return out | {
            "status": "MOVED",
            "reason": f"{g:+.1f}% [{lo:+.1f}, {hi:+.1f}] at {level:.2%} excludes 0",
        }
    if check != HALVES and (dlo > m or dhi < -m):
        return out | {
            "status": "LEAVES_MIN_GAIN",
            "reason": f"{g:+.1f}% [{dlo:+.1f}, {dhi:+.1f}] at {confidence:.0%} lies outside +-{m:g}%",
        }
    return out | {"status": "OK", "reason": f"{g:+.1f}% [{lo:+.1f}, {hi:+.1f}] at {level:.2%} holds 0"}


def drift(plan: ExperimentPlan, levels: dict[str, dict[int, list[Level]]]) -> list[dict[str, Any]]:
    """Per profile, the slope of per-start values against run slot (see the module docstring)."""
    span = len(schedule(plan)) - 1
    out = []
    for name, prof in plan.decide.profiles.items():
        groups = []
        for s in plan.settings:
            kept, _ = usable(levels.get(s.name, {}).get(prof.at, []), prof.key(name))
            pairs = [(x, math.log(v)) for x, v in per_start_slots(kept, prof.key(name)) if x is not None]
            groups.append(([x for x, _ in pairs], [y for _, y in pairs]))
        row: dict[str, Any] = {"profile": name, "metric": prof.metric, "concurrency": prof.concurrency,
                               "slots": span + 1, "confidence": plan.decide.confidence}  # fmt: skip
        sl = common_slope(groups, plan.decide.confidence)
        if sl is None:
            out.append(row | {"pct_per_slot": None, "over_run_pct": None, "flag": None,
                              "reason": "too few starts for a slope"})  # fmt: skip
            continue
        edge = math.log1p(prof.min_gain_pct / 100)
        lo, hi = (x * span for x in sl.ci)
        flag = "DRIFT" if lo > edge or hi < -edge else "POSSIBLE" if abs(sl.per_slot * span) > edge else None
        out.append(row | {
            "pct_per_slot": math.expm1(sl.per_slot) * 100,
            "pct_per_slot_ci": [math.expm1(x) * 100 for x in sl.ci],
            "over_run_pct": math.expm1(sl.per_slot * span) * 100,
            "over_run_ci_pct": [math.expm1(lo) * 100, math.expm1(hi) * 100],
            "starts": sl.n, "df": sl.df, "flag": flag,
        })  # fmt: skip
    return out
