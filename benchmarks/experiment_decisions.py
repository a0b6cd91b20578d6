"""How seatrial's experiment decisions hold at every metric: interval coverage, false ADOPT at the
decision boundary and at no effect, false INVALID from the A/A checks, and power, by simulation through
the experiment's own code (``seatrial.experiment.decide.decisions``, the plan's ``schedule``).

Model of one experiment: a baseline ``a``, a treatment ``b`` and an A/A control ``c`` (``a``'s twin), each
over ``starts`` fresh starts in the plan's ABBA order. A start has a random effect on the log scale
(normal, SD 0.05 or 0.10), a drift of ``--drift-pct`` per run slot, and one start in ten is slow (all its
latencies x1.3). Within a start: ``--requests`` requests with lognormal TTFTs (sigma 0.5) of which 2%
carry a heavy tail (x(1 + Pareto(1.5))); ITL from ``--itl-requests`` requests of 16 gaps each, every
request at its own speed (lognormal sigma 0.15) and 1% of gaps with the same heavy tail; throughput
per start = 1000 tok/s / (the start's factor x the mean of its requests' factors). The treatment makes
every latency 1/(1 + g) of the baseline's and the throughput (1 + g) times: a true gain g on every
metric. Rows: 2, 3, 4, 6 starts x output_tok_s, ttft_ms.p50, ttft_ms.p99, itl_ms.p99 x SD 0.05, 0.10,
min_gain 5%, confidence 95%. Printed per row: coverage of the 95% interval (the worst of the true gains
0, 5%, 10%), ADOPT at a true gain of +5% (= min_gain: every ADOPT is false), ADOPT or REJECT at 0,
INVALID at any gain (the A/A checks, false by construction), and ADOPT at +10% (power).
Targets: coverage >= 93%, false ADOPT at the boundary <= 2.5%, at 0 <= 1%.

    PYTHONPATH=src python benchmarks/experiment_decisions.py [--trials 4000] [--jobs 2] [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seatrial.experiment.decide import decisions
from seatrial.experiment.plan import ExperimentPlan, schedule

METRICS = ("output_tok_s", "ttft_ms.p50", "ttft_ms.p99", "itl_ms.p99")
STARTS = (2, 3, 4, 6)
SDS = (0.05, 0.10)
GAINS = (0.0, 0.05, 0.10)
MIN_GAIN = 5.0
GAPS = 16
SLOW_SHARE, SLOW = 0.1, 1.3
TAIL_SHARE_TTFT, TAIL_SHARE_ITL, PARETO = 0.02, 0.01, 1.5


def plan(metric: str, starts: int) -> ExperimentPlan:
    return ExperimentPlan.model_validate(
        {
            "serve": {"command": ["engine", "--port", "{port}"]},
            "baseline": {"name": "a", "args": ["--x", "1"]},
            "treatments": [{"name": "b", "args": ["--x", "2"]}, {"name": "c", "args": ["--x", "1"]}],
            "workload": {"concurrency": [8]},
            "starts": starts,
            "decide": {"profiles": {"p": {"concurrency": 8, "metric": metric, "min_gain_pct": MIN_GAIN}}},
        }
    )


def heavy(rng: np.random.Generator, shape: tuple[int, ...], share: float) -> np.ndarray:
    return np.where(rng.random(shape) < share, 1 + rng.pareto(PARETO, shape), 1.0)


def draw(
    rng: np.random.Generator, trials: int, starts: int, sd: float, gain: float, slots: np.ndarray, args: Any
) -> dict[str, np.ndarray]:
    """Per trial, setting (a, b, c) and start: TTFTs, ITL gaps per request and the throughput."""
    shape = (trials, 3, starts)
    scale = np.array([1.0, 1 / (1 + gain), 1.0])[None, :, None]  # b's latencies 1/(1+g)
    start = (
        np.exp(rng.normal(0, sd, shape))
        * (1 + args.drift_pct / 100) ** slots[None]
        * np.where(rng.random(shape) < SLOW_SHARE, SLOW, 1.0)
    )
    factor = (scale * start)[..., None]
    req = rng.lognormal(0, 0.5, (*shape, args.requests)) * heavy(
        rng, (*shape, args.requests), TAIL_SHARE_TTFT
    )
    ttft = 50.0 * factor * req
    speed = rng.lognormal(0, 0.15, (*shape, args.itl_requests, 1))
    gaps = rng.lognormal(0, 0.2, (*shape, args.itl_requests, GAPS)) * heavy(
        rng, (*shape, args.itl_requests, GAPS), TAIL_SHARE_ITL
    )
    itl = 5.0 * factor[..., None] * speed * gaps
    tok_s = 1000.0 / (scale * start * req.mean(axis=-1) / math.exp(0.5**2 / 2))
    return {"ttft_ms": ttft, "itl_ms": itl, "output_tok_s": tok_s}


def run_row(task: tuple[int, float, int, int, Any]) -> list[dict[str, Any]]:
    """All metrics and true gains for one (starts, SD): per metric the counts over trials."""
    starts, sd, trials, seed, args = task
    plans = {m: plan(m, starts) for m in METRICS}
    order = schedule(plans[METRICS[0]])
    names = ("a", "b", "c")
    slots = np.zeros((3, starts))
    for i, (name, k) in enumerate(order):
        slots[names.index(name), k] = i
    rng = np.random.default_rng(seed)
    counts = {
        m: {g: {"cover": 0, "adopt": 0, "reject": 0, "invalid": 0, "n": 0} for g in GAINS} for m in METRICS
    }
    methods: dict[str, set[str]] = {m: set() for m in METRICS}
    for gain in GAINS:
        done = 0
        while done < trials:
            chunk = min(args.chunk, trials - done)
            data = draw(rng, chunk, starts, sd, gain, slots, args)
            for t in range(chunk):
                levels = {
                    name: {8: [_level(data, t, s, k, int(slots[s, k])) for k in range(starts)]}
                    for s, name in enumerate(names)
                }
                for m in METRICS:
                    methods[m].add(_count(counts[m][gain], decisions(plans[m], levels, {"c": True}), gain))
            done += chunk
    return [
        {"starts": starts, "sd": sd, "metric": m, "method": "/".join(sorted(methods[m])), "counts": counts[m]}
        for m in METRICS
    ]


def _level(data: dict[str, np.ndarray], t: int, s: int, k: int, slot: int) -> dict[str, Any]:
    return {
        "output_tok_s": float(data["output_tok_s"][t, s, k]),
        "values": {"ttft_ms": data["ttft_ms"][t, s, k], "itl_ms": data["itl_ms"][t, s, k]},
        "start": k,
        "slot": slot,
        "stalled": None,
    }


def _count(c: dict[str, int], decided: dict[str, Any], gain: float) -> str:
    row = next(d for d in decided["decisions"] if d["treatment"] == "b")
    lo, hi = row["ci_pct"]
    c["n"] += 1
    c["cover"] += lo is not None and hi is not None and lo <= gain * 100 <= hi
    c["adopt"] += row["verdict"] == "ADOPT"
    c["reject"] += row["verdict"] == "REJECT"
    c["invalid"] += row["verdict"] == "INVALID"
    return str(row["method"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=4000, help="experiments per row and true gain")
    parser.add_argument("--requests", type=int, default=500, help="TTFT requests per start")
    parser.add_argument("--itl-requests", type=int, default=64, help="ITL requests per start (16 gaps each)")
    parser.add_argument("--drift-pct", type=float, default=0.3, help="latency drift per run slot, %%")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="a smoke test: 100 trials")
    args = parser.parse_args()
    if args.quick:
        args.trials = 100
    started = time.monotonic()
    tasks = [(n, sd, args.trials, 1000 * n + int(sd * 100), args) for n in STARTS for sd in SDS]
    with get_context("fork").Pool(args.jobs) as pool:
        rows = [r for part in pool.map(run_row, tasks) for r in part]
    _print(rows, args, time.monotonic() - started)


def _print(rows: list[dict[str, Any]], args: Any, seconds: float) -> None:
    print(
        f"{args.trials} synthetic experiments per row and true gain; {args.requests} requests (TTFT) and "
        f"{args.itl_requests}x{GAPS} ITL gaps per start; drift {args.drift_pct}%/slot; 1 slow start in 10 (x{SLOW}); "
        f"min_gain {MIN_GAIN:g}%, 95% intervals; an A/A control in every plan"
    )
    head = (
        f"{'starts':>6} {'SD':>5} {'metric':<13} {'method':<20} | {'coverage':>8} | {'ADOPT@+5%':>9} "
        f"{'ADOPT@0':>8} {'REJECT@0':>8} | {'INVALID':>7} | {'power@+10%':>10}"
    )
    print(head)
    print("-" * len(head))
    worst = {"cover": 1.0, "boundary": 0.0, "adopt0": 0.0, "reject0": 0.0, "invalid": 0.0}
    for r in sorted(rows, key=lambda r: (r["metric"], r["starts"], r["sd"])):
        c = r["counts"]
        cover = min(c[g]["cover"] / c[g]["n"] for g in GAINS)
        boundary = c[0.05]["adopt"] / c[0.05]["n"]
        adopt0, reject0 = c[0.0]["adopt"] / c[0.0]["n"], c[0.0]["reject"] / c[0.0]["n"]
        invalid = sum(c[g]["invalid"] for g in GAINS) / sum(c[g]["n"] for g in GAINS)
        power = c[0.10]["adopt"] / c[0.10]["n"]
        for key, v, pick in (("cover", cover, min), ("boundary", boundary, max), ("adopt0", adopt0, max),
                             ("reject0", reject0, max), ("invalid", invalid, max)):  # fmt: skip
            worst[key] = pick(worst[key], v)
        print(
            f"{r['starts']:>6} {r['sd']:>5.2f} {r['metric']:<13} {r['method']:<20} | {cover:>8.1%} | "
            f"{boundary:>9.2%} {adopt0:>8.2%} {reject0:>8.2%} | {invalid:>7.2%} | {power:>10.1%}"
        )
    n = args.trials
    print(
        f"worst: coverage {_ci(worst['cover'], n)} (target >= 93%), false ADOPT at the boundary "
        f"{_ci(worst['boundary'], n)} (<= 2.5%), at 0 {_ci(worst['adopt0'], n)} (<= 1%; REJECT at 0 "
        f"{_ci(worst['reject0'], n)}), false INVALID {_ci(worst['invalid'], 3 * n)}"
    )
    ok = (
        worst["cover"] >= 0.93
        and worst["boundary"] <= 0.025
        and max(worst["adopt0"], worst["reject0"]) <= 0.01
    )
    print(
        f"targets {'met' if ok else 'NOT met'} (on the estimates; [..] is each worst rate's 95% Clopper-Pearson "
        f"interval over its {n} experiments); {seconds:,.0f} s on {args.jobs} processes"
    )


def _ci(rate: float, n: int) -> str:
    from scipy.stats import beta

    k = round(rate * n)
    lo = beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
    hi = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return f"{rate:.2%} [{lo:.2%}, {hi:.2%}]"


if __name__ == "__main__":
    main()
