"""How often does a capacity probe MEET a target its server does not hold, over all its looks? (issue 38
item 5)

A probe that is INCONCLUSIVE runs again at the same load and looks again at all its requests; each look
may MEET by chance. seatrial pays for the looks by alpha spending (capacity.looks: look j at the two-sided
confidence 1 - (1 - c) / 2^j, so the false MEETS chances of all looks sum to at most (1 - c) / 2). This
benchmark drives seatrial's own ``Looks`` (run sizes, batch-clustered Wilson interval with the in-flight
floor, the looks) over the outcomes of the continuous-batching law (benchmarks/batching_law.py, the laws
of benchmarks/attainment_coverage.py: about 2.5 to 230 requests in flight) at a load whose long-run
attainment is 0.01 under the target:

- open loop: Poisson arrivals at the rate whose long-run attainment is TARGET - 0.01 (bisection on an
  exact simulation of 200,000 arrivals), SLO TTFT <= 500 ms and TPOT <= 40 ms, 64 output tokens;
- closed loop: USERS users (more than the slots, so they queue), output lengths uniform on 16..112, the
  TTFT bound at the long run's (TARGET - 0.01) quantile.

Each probe takes its runs from one long steady run (after its MSER-5 warm-up), consecutive, probes a gap
apart: the sampling error and the looks alone (a run's own warm-up is issue 38 item 2's). Printed per
law: the true attainment, the probes, their false MEETS share over all looks with its 95% Wilson
interval, for seatrial and for every look at the plain confidence (as seatrial did before), the share
that MISSES (correctly), the looks and requests per probe. Target: false MEETS <= 2.5% at confidence
0.95, met where the interval's upper end is at most that, NOT met where its lower end is above it.

    PYTHONPATH=src python benchmarks/probe_looks.py [--probes 400] [--laws S=4,S=16] [--loop closed]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from attainment_coverage import LAWS, N_OUT, SLO, USERS, in_flight
from batching_law import Served, closed_loop, mser5, simulate, true_capacity

from seatrial.capacity.looks import Looks, first_run
from seatrial.stats.proportions import wilson

TARGET = 0.9
UNDER = 0.01  # the truth lies this far under the target
BUDGET = 4  # a probe's requests at most, in first runs (capacity's default)


class PlainLooks(Looks):
    """Every look at the plain confidence: no alpha spending (seatrial before issue 38 item 5)."""

    def look_confidence(self, look: int) -> float:
        return self.confidence


def steady(served: Served, good: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cut = mser5(served.ttft_ms)
    return good[cut:], served.arrival_s[cut:], served.e2e_ms[cut:]


def open_series(name: str, total: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    law = LAWS[name]
    rate = true_capacity(law, N_OUT, SLO, TARGET - UNDER, arrivals=200_000, rel_tol=5e-4)
    served = simulate(np.cumsum(rng.exponential(1.0, total)) / rate, N_OUT, law)
    return steady(served, served.good(SLO))


def closed_series(name: str, total: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    law, users = LAWS[name], USERS[name]
    long = closed_loop(users, rng.integers(16, 113, 200_000), law)
    bound = float(np.quantile(long.ttft_ms[mser5(long.ttft_ms) :], TARGET - UNDER))
    served = closed_loop(users, rng.integers(16, 113, total), law)
    return steady(served, served.good({"ttft_ms": bound, "tpot_ms": 1e9}))


def run_probes(kind: type[Looks], series: tuple[np.ndarray, np.ndarray, np.ndarray], probes: int, open_loop: bool,
               confidence: float) -> list[Looks]:  # fmt: skip
    good, sent, e2e = series
    first = first_run(TARGET, confidence)
    at, done = 0, []
    for _ in range(probes):
        looks = kind(TARGET, confidence, open_loop, first, BUDGET * first)
        while (size := looks.next_size()) and at + size <= len(good):
            w = slice(at, at + size)
            looks.add(good[w].tolist(), in_flight(sent[w], e2e[w]))
            at += size
        if looks.judged is None or at + first > len(good):
            break
        done.append(looks)
        at += first  # a gap between probes
    return done


def line(label: str, done: list[Looks]) -> str:
    verdicts = [lk.judged.verdict for lk in done if lk.judged is not None]
    meets, misses = verdicts.count("MEETS"), verdicts.count("MISSES")
    lo, hi = wilson(meets, len(verdicts))
    looks = np.mean([len(lk.runs) for lk in done])
    used = np.median([lk.used for lk in done])
    ok = "met" if hi <= 0.025 else "NOT met" if lo > 0.025 else "not shown (the interval straddles it)"
    return (f"  {label:<16} false MEETS {meets}/{len(verdicts)} = {meets / len(verdicts):.1%} [{lo:.1%}, {hi:.1%}] "
            f"(target <= 2.5%: {ok}); MISSES {misses / len(verdicts):.1%}; looks {looks:.2f}, requests {used:.0f}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probes", type=int, default=400)
    ap.add_argument("--laws", default=",".join(LAWS))
    ap.add_argument("--loop", choices=("open", "closed"), default="open")
    ap.add_argument("--confidence", type=float, default=0.95)
    a = ap.parse_args()
    first = first_run(TARGET, a.confidence)
    print(f"target {TARGET:.0%}, truth {TARGET - UNDER:.0%} (long run); {a.loop} loop; confidence {a.confidence:g}; "
          f"first run {first} requests, at most {BUDGET * first} a probe; {a.probes} probes per law")  # fmt: skip
    for name in a.laws.split(","):
        started = time.perf_counter()
        rng = np.random.default_rng(5)
        make = open_series if a.loop == "open" else closed_series
        series = make(name, 20_000 + (BUDGET + 1) * first * a.probes, rng)
        truth = float(series[0].mean())
        flight = in_flight(series[1][:20_000], series[2][:20_000])
        print(f"{name}: {flight:.1f} in flight, true attainment {truth:.4f}", flush=True)
        for label, kind in (("seatrial", Looks), ("plain per look", PlainLooks)):
            print(line(label, run_probes(kind, series, a.probes, a.loop == "open", a.confidence)), flush=True)
        print(f"  ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
