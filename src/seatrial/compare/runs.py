"""``seatrial compare RUN...``: run folders side by side per workload and level, in verdict words.

- Runs of one workload: each against the first (the reference), level by level. With 2 or more starts
  a side the experiment's machinery decides (one value per start, Welch on the logs, a pooled
  percentile only with its ``min_samples``, no verdict from a between-start SD below the resolution).
  With one start on a side the start-to-start variation is unknown: the verdict is INCONCLUSIVE with
  that reason, and a request-level metric shows the interval its requests alone give, labelled within
  run (``bootstrap-requests-within-run``). A level whose client stalled is left out of the request
  timings. Values are geometric means of per-start values for throughputs and pooled statistics (with
  their n) for request-level metrics; ratios and gains are ratios of geometric means of per-start values.
- Runs of deployments (``NAME=PATH``) over prefill-only, decode-only and mixed workloads (seed 001), and
  their capacity runs: seatrial.compare.deployments (two: per phase and level with intervals, the
  precision/topology split refused as confounded; a 2 x 2 named PRECISION@TOPOLOGY: each factor with its
  interval; capacities at the SLO, per GPU and per dollar).
- Workloads that differ (lengths, ignore_eos, endpoint...) are never compared: ConfigError naming them.
Verdicts: IMPROVED (the whole interval above +threshold), REGRESSED (below -threshold), NO_EFFECT (inside
+-threshold), INCONCLUSIVE (anything else, every figure without an interval between starts, and one start
on a side). No correction for the many metrics and levels compared: a table to read, not a decision.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from seatrial.compare.deployments import deployment_comparison
from seatrial.errors import ConfigError
from seatrial.experiment.checks import usable
from seatrial.experiment.decide import blockers
from seatrial.experiment.sources import Run, load_runs, workload_differences
from seatrial.experiment.values import effect, flat, per_start, pooled_n
from seatrial.load.metric_table import lower_is_better
from seatrial.runs.summaries.compare import CompareSummary
from seatrial.stats.effects import Effect, statistic, within_run

METRICS = ("output_tok_s", "ttft_ms.p50", "ttft_ms.p99", "tpot_ms.p50", "itl_ms.p99", "e2e_ms.p50")
ONE_START = "one start per side: start-to-start variation unknown"


def parse_run_args(args: list[str]) -> list[tuple[str | None, Path]]:
    out: list[tuple[str | None, Path]] = []
    for a in args:
        name, eq, path = a.partition("=")
        out.append((name, Path(path)) if eq and name and "/" not in name else (None, Path(a)))
    return out


def _value(starts: list[dict[str, Any]], metric: str) -> float | None:
    """A throughput's geometric mean over starts; a request-level metric's pooled statistic."""
    base, _, stat = metric.partition(".")
    if not stat:
        vals = per_start(starts, metric)
        return math.exp(sum(map(math.log, vals)) / len(vals)) if vals else None
    parts = [flat(st["values"].get(base, [])) for st in starts]
    return statistic(np.concatenate(parts) if parts else np.empty(0), stat)


def metric_effect(
    a: list[dict[str, Any]], b: list[dict[str, Any]], metric: str
) -> tuple[Effect, list[str], list[str]]:
    """B against A, what keeps it from a verdict, and the starts left out (see the module docstring)."""
    base, _, stat = metric.partition(".")
    better_higher = not lower_is_better(metric)
    (a, out_a), (b, out_b) = usable(a, metric), usable(b, metric)
    if min(len(a), len(b)) >= 2:
        e = effect(a, b, metric, better_higher, 0.95)
        return e, blockers(e, a, b, metric), out_a + out_b
    why = (
        ONE_START if len(a) == len(b) == 1 else f"{len(a)}+{len(b)} starts: start-to-start variation unknown"
    )
    if not stat or not a or not b:
        return effect(a, b, metric, better_higher, 0.95), [why], out_a + out_b
    requests_a = [np.atleast_1d(r) for st in a for r in st["values"].get(base, [])]
    requests_b = [np.atleast_1d(r) for st in b for r in st["values"].get(base, [])]
    return within_run(requests_a, requests_b, stat, better_higher), [why], out_a + out_b


def verdict(ci: tuple[float | None, float | None], threshold: float, blocked: bool = False) -> str:
    lo, hi = ci
    if lo is None or hi is None or blocked:
        return "INCONCLUSIVE"
    if lo > threshold:
        return "IMPROVED"
    if hi < -threshold:
        return "REGRESSED"
    if -threshold < lo and hi < threshold:
        return "NO_EFFECT"
    return "INCONCLUSIVE"


def compare_levels(base: Run, other: Run, workload: str, threshold: float) -> list[dict[str, Any]]:
    rows = []
    for (key, level), starts_b in sorted(other.levels.items(), key=lambda kv: _order(kv[0][1])):
        starts_a = base.levels.get((key, level))
        if key != workload or not starts_a:
            continue
        metrics = []
        for metric in METRICS:
            e, blockers, left_out = metric_effect(starts_a, starts_b, metric)
            ratio = (
                None
                if e.log_gain is None
                else math.exp(-e.log_gain if lower_is_better(metric) else e.log_gain)
            )
            kind = "within run" if e.method.endswith("within-run") else "between starts"
            metrics.append({
                "metric": metric, "baseline": _value(starts_a, metric), "candidate": _value(starts_b, metric),
                "pooled_n": [pooled_n(starts_a, metric), pooled_n(starts_b, metric)], "ratio": ratio,
                "gain_pct": e.gain_pct, "ci_pct": list(e.ci_pct), "method": e.method,
                "interval": kind if e.ci_pct[0] is not None else None, "starts": [e.n_a, e.n_b],
                "verdict": verdict(e.ci_pct, threshold, bool(blockers)), "reasons": blockers + left_out,
            })  # fmt: skip
        rows.append({"workload": workload, "level": level, "baseline": base.label, "candidate": other.label,
                     "metrics": metrics})  # fmt: skip
    return rows


def _order(level: str) -> float:
    return float(level.removeprefix("C=").removesuffix("/s"))


def _one_workload(runs: list[Run]) -> str:
    """The workload every run measured; ConfigError naming what differs otherwise."""
    ref = runs[0]
    if not ref.workloads:
        raise ConfigError(f"{ref.label} measured no workload (a run stopped before its first level?): nothing to compare")
    if len(ref.workloads) != 1:
        raise ConfigError(
            f"{ref.label} measured several workloads ({', '.join(ref.workloads)}): compare one at a time"
        )
    ((key, fields),) = ref.workloads.items()
    for r in runs[1:]:
        if key not in r.workloads or workload_differences(fields, r.workloads[key]):
            theirs = next(iter(r.workloads.values()), {})
            diffs = workload_differences(fields, theirs)
            raise ConfigError(
                f"{ref.label} and {r.label} measured different workloads ({'; '.join(diffs)}): not compared"
            )
    return key


def compare(args: list[str], threshold: float = 5.0) -> CompareSummary:
    """The comparison of the run folders named by ``args`` (``PATH`` or ``NAME=PATH``)."""
    parsed = parse_run_args(args)
    runs_by_arg = [(name, load_runs(path, name if name else None)) for name, path in parsed]
    named: dict[str, list[Run]] = {}
    for name, rs in runs_by_arg:
        if name:
            named.setdefault(name, []).extend(rs)
    if len(named) >= 2 and all(name for name, _ in runs_by_arg):
        dep = deployment_comparison(named)
        return CompareSummary.model_validate({
            "mode": "deployments", "threshold_pct": threshold, "runs": [str(p) for _, p in parsed],
            "comparisons": _pair_rows(named, threshold) if dep["design"] == "pair" else [], "deployment": dep,
        })  # fmt: skip
    runs = [r for _, rs in runs_by_arg for r in rs if r.capacity is None]
    if any(r.capacity is not None for _, rs in runs_by_arg for r in rs):
        raise ConfigError("capacity runs are compared as deployments: NAME=PATH for each (see docs/capacity.md)")
    if len(runs) < 2:
        raise ConfigError("compare needs two or more runs (an experiment folder gives one per setting)")
    workload = _one_workload(runs)
    comparisons = [row for other in runs[1:] for row in compare_levels(runs[0], other, workload, threshold)]
    if not comparisons:
        raise ConfigError(f"no level of {runs[0].label} is in the other runs (they share no valid level)")
    return CompareSummary.model_validate({
        "mode": "runs", "threshold_pct": threshold, "reference": runs[0].label, "workload": workload,
        "runs": [r.label for r in runs], "comparisons": comparisons,
    })  # fmt: skip


def _pair_rows(named: dict[str, list[Run]], threshold: float) -> list[dict[str, Any]]:
    """Two deployments level by level in verdict words, the first as the candidate (gains are its); a
    deployment's runs of one workload kind are pooled as its starts."""
    (name_a, a), (name_b, b) = named.items()
    rows = []
    for kind in sorted(_pooled(a, name_a).keys() & _pooled(b, name_b).keys()):
        ra, rb = _pooled(a, name_a)[kind], _pooled(b, name_b)[kind]
        rows += compare_levels(rb, ra, next(iter(ra.workloads)), threshold)
    return rows


def _pooled(runs: list[Run], name: str) -> dict[str, Run]:
    """One Run per workload kind holding the starts of all of this deployment's runs of that kind."""
    out: dict[str, Run] = {}
    for r in runs:
        if r.capacity is not None:
            continue
        for key, fields in r.workloads.items():
            pool = out.setdefault(fields["name"], Run(name, "deployment", r.path, {key: fields}))
            for (k, level), starts in r.levels.items():
                if k == key:
                    pool.levels.setdefault((key, level), []).extend(starts)
    return out


def finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)
