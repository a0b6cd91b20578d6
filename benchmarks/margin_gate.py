"""Can a run's latency margin stand in for the capacity probe's correlation floor? (issue 38: why not)

A capacity probe's interval divides its requests by a correlation floor of 5 (L - 1) in an open loop, which
makes probes far below the truth (no request near its bound) cost thousands of requests. A tempting shortcut:
where every request of a run stays well inside its SLO (the margin m = max(TTFT / bound, TPOT / bound) below
``--gate`` for all of them), drop the floor. This benchmark measures what that shortcut would cost in honesty:
runs as a probe runs them (a leading warm-up of a quarter, then the measured requests, arrivals going on past
them: the cool-down), 10x the requests in flight long (at least 139), through the continuous-batching laws of
benchmarks/attainment_coverage.py at loads from 0.3x to 1.1x of each law's true capacity. Printed per load:
the long-run attainment, the requests in flight, the run length, the median of a run's largest margin, and how
often a run's largest margin is under the gate: at loads whose attainment is under the 0.9 target, that share
is how often the shortcut would let an all-good run MEET a rate the server cannot hold.

    PYTHONPATH=src python benchmarks/margin_gate.py [--runs 300] [--gate 0.8] [--laws S=16,S=64]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from attainment_coverage import LAWS, N_OUT, SLO, TARGET, in_flight
from batching_law import Served, mser5, simulate, true_capacity

from seatrial.stats.proportions import wilson

LOADS = (0.3, 0.5, 0.7, 0.85, 0.95, 1.0, 1.03, 1.1)


def margin(s: Served) -> np.ndarray:
    return np.maximum(s.ttft_ms / SLO["ttft_ms"], s.tpot_ms / SLO["tpot_ms"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--gate", type=float, default=0.8)
    ap.add_argument("--laws", default=",".join(LAWS))
    ap.add_argument("--seed", type=int, default=9)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    print(f"SLO {SLO} for {TARGET:.0%}; runs of max(139, 10 L) measured requests with warm-up and cool-down, "
          f"{a.runs} a load; gate: every margin under {a.gate:g}")  # fmt: skip
    print(f"{'law':>6} {'load':>5} {'attain':>7} {'L':>6} {'run':>5} {'max m p50':>9}  all under the gate [95% Wilson]")
    for name in a.laws.split(","):
        law = LAWS[name]
        cap = true_capacity(law, N_OUT, SLO, TARGET, arrivals=200_000, rel_tol=2e-3)
        for f in LOADS:
            long = simulate(np.cumsum(rng.exponential(1.0, 100_000)) / (cap * f), N_OUT, law)
            cut = mser5(long.ttft_ms)
            truth = float(long.good(SLO)[cut:].mean())
            flight = in_flight(long.arrival_s[cut:], long.e2e_ms[cut:])
            if flight > 2000:  # overloaded: its queue grows without end (load.window calls it so)
                print(f"{name:>6} {f:5.2f} {truth:7.4f} {'grows':>6}  (overloaded: a probe MISSES it at once)")
                continue
            n = max(139, int(10 * flight))
            lead = max(2, round(0.25 * n))
            largest = []
            for _ in range(a.runs):
                run = simulate(np.cumsum(rng.exponential(1.0, lead + 3 * n)) / (cap * f), N_OUT, law)
                largest.append(float(margin(run)[lead : lead + n].max()))
            under = int(np.sum(np.asarray(largest) < a.gate))
            lo, hi = wilson(under, a.runs, 0.95)
            flag = "  <- attainment under the target" if truth < TARGET else ""
            print(f"{name:>6} {f:5.2f} {truth:7.4f} {flight:6.1f} {n:5d} {np.median(largest):9.3f}  "
                  f"{under / a.runs:6.1%} [{lo:.1%}, {hi:.1%}]{flag}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
