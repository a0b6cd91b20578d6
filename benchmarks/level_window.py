"""Does a level's window tell a steady load from an overloaded one? (issue 38 item 2)

Each level is what a capacity probe sends in rate mode: Poisson arrivals into an empty server, a leading
warm-up of a quarter of the measured requests (excluded), the measured requests, and a cool-down of a
quarter more (so the last measured ones are not served by a draining server), through the
continuous-batching law of the synthetic server (benchmarks/batching_law.py; the laws of
benchmarks/attainment_coverage.py, about 2.5 to 230 requests in flight at their capacity). seatrial's own
``steady_window`` (MSER-5 cut, Heidelberger-Welch stationarity, the rising-trend test) reads each level's
measured TTFTs. The truth: below the law's throughput limit (its full batch's completions per second) the
queue has a steady state; above it, it grows without bound (overloaded).

Printed per law, level size and load (as a multiple of the throughput limit): the share of levels called
overloaded (at 0.5-0.9x: false alarms, target <= 1%; at 1.1x and above: detection), not stationary, and
the median share of measured requests the window left to the warm-up, over ``--levels`` levels.

    PYTHONPATH=src python benchmarks/level_window.py [--levels 200] [--sizes 182,728] [--laws S=4,S=64]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from attainment_coverage import LAWS, N_OUT
from batching_law import simulate, throughput_limit

from seatrial.load.records import RequestRecord
from seatrial.load.window import steady_window
from seatrial.stats.proportions import wilson

LOADS = (0.5, 0.8, 0.9, 1.1, 1.3, 2.0)  # x the throughput limit


def level(rng: np.random.Generator, rate: float, n: int, name: str) -> tuple[bool, bool | None, float]:
    lead, tail = max(2, n // 4), max(1, n // 4)
    served = simulate(np.cumsum(rng.exponential(1.0, lead + n + tail)) / rate, N_OUT, LAWS[name])
    records = [RequestRecord(str(i), "measure", 1, sent_ms=float(served.arrival_s[i] * 1e3),
                             ttft_ms=float(served.ttft_ms[i]), output_tokens=N_OUT)
               for i in range(lead, lead + n)]  # fmt: skip
    *_, window = steady_window(records, open_loop=True, cut=True)
    return window.overloaded, window.stationary, window.excluded / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", type=int, default=200)
    ap.add_argument("--sizes", default="182,728")
    ap.add_argument("--laws", default=",".join(LAWS))
    a = ap.parse_args()
    print(f"{a.levels} levels per cell; load as a multiple of the law's throughput limit; overloaded share with "
          f"its 95% Wilson interval (target at <= 0.9x: <= 1%)")  # fmt: skip
    print(f"{'law':>6} {'limit/s':>8} {'n':>5} {'load':>5} {'overloaded':>24} {'not stationary':>15} {'moved':>6}")
    for name in a.laws.split(","):
        started = time.perf_counter()
        limit = throughput_limit(LAWS[name], N_OUT)
        rng = np.random.default_rng(3)
        for n in (int(x) for x in a.sizes.split(",")):
            for x in LOADS:
                got = [level(rng, x * limit, n, name) for _ in range(a.levels)]
                over = sum(o for o, _, _ in got)
                lo, hi = wilson(over, len(got))
                moving = sum(s is False for _, s, _ in got) / len(got)
                moved = float(np.median([m for _, _, m in got]))
                print(f"{name:>6} {limit:8.1f} {n:5d} {x:5.2f} {over / len(got):8.1%} [{lo:5.1%}, {hi:5.1%}] "
                      f"{moving:15.1%} {moved:6.1%}", flush=True)  # fmt: skip
        print(f"{'':>6} ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
