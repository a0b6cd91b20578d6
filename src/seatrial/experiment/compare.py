"""``seatrial compare RUN...``: run folders side by side per workload and level, in verdict words.

- Runs of one workload: each against the first (the reference), level by level: medians and tails from
  the requests (two-level bootstrap intervals: starts, then requests; a single run's interval holds only
  the spread of its requests) and throughput (Welch over starts, where a run has several).
- Runs of two deployments (``NAME=PATH`` with two names) over prefill-only, decode-only and mixed
  workloads (seed 001): per workload and level the ratio of deployment A's speed to B's, then the
  decode TPOT ratio as the precision share and the rest of the prefill throughput ratio as the topology
  share: an estimate (a decode gain from reading less memory and a prefill gain from computing less need
  not be the same factor).
- Workloads that differ (lengths, ignore_eos, endpoint...) are never compared: ConfigError naming them.
Verdicts: IMPROVED (the whole interval above +threshold), REGRESSED (below -threshold), NO_EFFECT (inside
+-threshold), INCONCLUSIVE (anything else, and every figure without an interval).
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from seatrial.errors import ConfigError
from seatrial.experiment.plan import lower_is_better
from seatrial.experiment.sources import WORKLOAD_KEYS, Run, load_runs
from seatrial.stats.effects import Effect, pooled_effect, pooled_stat, welch_log

METRICS = ("output_tok_s", "ttft_ms.p50", "ttft_ms.p99", "tpot_ms.p50", "itl_ms.p99", "e2e_ms.p50")


def parse_run_args(args: list[str]) -> list[tuple[str | None, Path]]:
    out: list[tuple[str | None, Path]] = []
    for a in args:
        name, eq, path = a.partition("=")
        out.append((name, Path(path)) if eq and name and "/" not in name else (None, Path(a)))
    return out


def _value(starts: list[dict[str, Any]], metric: str) -> float | None:
    base, _, stat = metric.partition(".")
    if not stat:
        vals = [st[base] for st in starts if st.get(base)]
        return sum(vals) / len(vals) if vals else None
    return pooled_stat([st["values"].get(base, []) for st in starts], stat)


def metric_effect(a: list[dict[str, Any]], b: list[dict[str, Any]], metric: str) -> Effect:
    base, _, stat = metric.partition(".")
    better_higher = not lower_is_better(metric)
    if not stat:
        return welch_log(
            [st[base] for st in a if st.get(base)], [st[base] for st in b if st.get(base)], better_higher
        )
    starts_a = [st["values"].get(base, []) for st in a]
    starts_b = [st["values"].get(base, []) for st in b]
    return pooled_effect(starts_a, starts_b, stat, better_higher, min_starts=1)


def verdict(ci: tuple[float | None, float | None], threshold: float) -> str:
    lo, hi = ci
    if lo is None or hi is None:
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
            e = metric_effect(starts_a, starts_b, metric)
            a, b = _value(starts_a, metric), _value(starts_b, metric)
            metrics.append({
                "metric": metric, "baseline": a, "candidate": b, "ratio": b / a if a and b else None,
                "gain_pct": e.gain_pct, "ci_pct": list(e.ci_pct), "method": e.method,
                "starts": [e.n_a, e.n_b], "verdict": verdict(e.ci_pct, threshold),
            })  # fmt: skip
        rows.append({"workload": workload, "level": level, "baseline": base.label, "candidate": other.label,
                     "metrics": metrics})  # fmt: skip
    return rows


def _order(level: str) -> float:
    return float(level.removeprefix("C=").removesuffix("/s"))


def workload_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [f"{k}: {a.get(k)!r} vs {b.get(k)!r}" for k in WORKLOAD_KEYS if a.get(k) != b.get(k)]


def _one_workload(runs: list[Run]) -> str:
    """The workload every run measured; ConfigError naming what differs otherwise."""
    ref = runs[0]
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


def deployment_comparison(
    a: list[Run], b: list[Run], names: tuple[str, str], threshold: float
) -> dict[str, Any]:
    """Seed 001's table: per workload kind and level, A's speed over B's; the precision and topology shares."""

    def by_kind(runs: list[Run]) -> dict[str, tuple[Run, str]]:
        out: dict[str, tuple[Run, str]] = {}
        for r in runs:
            for key, fields in r.workloads.items():
                out[fields["name"]] = (r, key)
        return out

    ka, kb = by_kind(a), by_kind(b)
    comparisons, phases = [], []
    for kind in sorted(ka.keys() & kb.keys()):
        (ra, key_a), (rb, key_b) = ka[kind], kb[kind]
        diffs = workload_differences(ra.workloads[key_a], rb.workloads[key_b])
        if diffs:
            raise ConfigError(
                f"{names[0]} and {names[1]} ran {kind!r} differently ({'; '.join(diffs)}): not compared"
            )
        rows = compare_levels(rb, ra, key_a, threshold)  # A as the candidate: gains are A's over B
        comparisons += rows
        for row in rows:
            m = {x["metric"]: x for x in row["metrics"]}
            tok = m["output_tok_s"]
            ttft, tpot = m["ttft_ms.p50"], m["tpot_ms.p50"]
            prompt = _prompt_ratio(ra, rb, key_a, row["level"])
            phases.append({
                "workload": kind, "level": row["level"],
                "prefill_throughput_ratio": prompt,  # A's prompt tok/s over B's
                "ttft_ratio": _inverse(ttft["ratio"]),  # B's TTFT over A's: how many times faster A is
                "tpot_ratio": _inverse(tpot["ratio"]), "output_tok_s_ratio": tok["ratio"],
            })  # fmt: skip
    decode = [p["tpot_ratio"] for p in phases if p["workload"] == "decode" and p["tpot_ratio"]]
    precision = statistics.median(decode) if decode else None
    shares = []
    for p in phases:
        if p["workload"] == "prefill" and p["prefill_throughput_ratio"] and precision:
            shares.append({"level": p["level"], "prefill_ratio": p["prefill_throughput_ratio"],
                           "precision_share": precision, "topology_share": p["prefill_throughput_ratio"] / precision})  # fmt: skip
    return {"names": list(names), "comparisons": comparisons, "phases": phases, "precision_share": precision,
            "decode_tpot_ratios": decode, "split": shares, "estimate": True,
            "missing": sorted((ka.keys() | kb.keys()) - (ka.keys() & kb.keys()))}  # fmt: skip


def _inverse(ratio: float | None) -> float | None:
    return 1 / ratio if ratio else None


def _prompt_ratio(a: Run, b: Run, key: str, level: str) -> float | None:
    """A's prompt tokens per second over B's at one level (the seed's prefill throughput)."""

    def rate(run: Run) -> float | None:
        starts = run.levels.get((key, level)) or []
        vals = [
            st["prompt_tokens"] / st["duration_s"]
            for st in starts
            if st.get("prompt_tokens") and st.get("duration_s")
        ]
        return sum(vals) / len(vals) if vals else None

    x, y = rate(a), rate(b)
    return x / y if x and y else None


def compare(args: list[str], threshold: float = 5.0) -> dict[str, Any]:
    """The comparison of the run folders named by ``args`` (``PATH`` or ``NAME=PATH``)."""
    parsed = parse_run_args(args)
    runs_by_arg = [(name, load_runs(path, name if name else None)) for name, path in parsed]
    named = {name for name, _ in runs_by_arg if name}
    if len(named) == 2 and all(name for name, _ in runs_by_arg):
        first, second = (n for n in dict.fromkeys(name for name, _ in runs_by_arg))
        a = [r for n, rs in runs_by_arg if n == first for r in rs]
        b = [r for n, rs in runs_by_arg if n == second for r in rs]
        dep = deployment_comparison(a, b, (str(first), str(second)), threshold)
        return {"mode": "deployments", "threshold_pct": threshold, "runs": [str(p) for _, p in parsed],
                "comparisons": dep.pop("comparisons"), "deployment": dep}  # fmt: skip
    runs = [r for _, rs in runs_by_arg for r in rs]
    if len(runs) < 2:
        raise ConfigError("compare needs two or more runs (an experiment folder gives one per setting)")
    workload = _one_workload(runs)
    comparisons = [row for other in runs[1:] for row in compare_levels(runs[0], other, workload, threshold)]
    if not comparisons:
        raise ConfigError(f"no level of {runs[0].label} is in the other runs (they share no valid level)")
    return {"mode": "runs", "threshold_pct": threshold, "reference": runs[0].label, "workload": workload,
            "runs": [r.label for r in runs], "comparisons": comparisons}  # fmt: skip


def finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)
