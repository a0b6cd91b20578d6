"""Whole capacity searches at GPU scale, in simulated time (issue 38): how true is the lower bound at about
2.5, 15, 60 and 230 requests in flight at the truth?

The servers are the continuous-batching laws of benchmarks/attainment_coverage.py (c slots, FCFS, a step of
b running requests takes t0 (1 + a (b - 1)), 64 output tokens, SLO TTFT <= 500 ms and TPOT <= 40 ms for
90%), simulated exactly (benchmarks/batching_law.py); the truth is the highest Poisson rate whose long-run
attainment holds the target (400,000 arrivals a rate, MSER-5 burn-in, bisection). A real HTTP server of
that law cannot keep up with hundreds in flight on two cores, so the probes' levels are simulated too,
and everything else is seatrial's own code: capacity.search's ramp and bisection, capacity.probe and
capacity.looks (run sizes, 10x the in-flight forecast, batch-clustered intervals, alpha spending over the
looks), capacity.run's in-flight forecast, load.window's MSER-5 window and overload call, load.goodput's
good request. A level is what bench sends: a leading warm-up of a quarter of its measured requests, the
measured ones, and arrivals going on until the last measured request ends (its cool-down).

Each search starts at the truth x 2^U with U uniform on [-2, 0] (the grid's position drawn at random);
precision 0.05 (capacity's default), confidence 0.95. Beside it, on the same law: a point-estimate
search (one run of the first run's size a probe, no warm-up cut, MEETS at attainment >= target: a
serve_workload sweep's or GuideLLM's goodput rule) and a plain Wilson search (one such run, MEETS when
its independent Wilson lower bound clears the target, MISSES otherwise). Printed per law: the truth, the
requests in flight there, each procedure's share of searches at or below the truth with its 95% Wilson
interval, the median answer / truth, the requests and the simulated minutes a search spent. Targets (the
issue's): at or below the truth in >= 95% of searches, median >= 0.85 x the truth, at every law.

The closed loop (``--loop closed``, capacity's ``--mode concurrency``): C users that send again as each
answer ends; the truth is the most users whose long-run attainment (100,000 requests, MSER-5) holds the
target; searches start at round(truth x 2^U).

    PYTHONPATH=src python benchmarks/capacity_at_scale.py [--searches 100] [--laws S=4,S=64] [--loop closed]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from attainment_coverage import LAWS, N_OUT, SLO
from batching_law import closed_loop, mser5, simulate, true_capacity

from seatrial.capacity.looks import Looks, first_run
from seatrial.capacity.probe import probe
from seatrial.capacity.run import LEAD_SHARE, forecast
from seatrial.capacity.search import Search
from seatrial.load.goodput import is_good
from seatrial.load.level import LevelOutcome
from seatrial.load.records import RequestRecord
from seatrial.load.window import judge_length, steady_window
from seatrial.runs.summaries.bench import DeliveryStats, LevelSummary
from seatrial.runs.summaries.capacity import Probe
from seatrial.stats.proportions import wilson
from seatrial.testing.batching import BatchLaw

TARGET, CONFIDENCE, PRECISION = 0.9, 0.95, 0.05


class Level:
    """One law's levels in simulated time, and what the searches spent."""

    def __init__(self, law: BatchLaw, rng: np.random.Generator, open_loop: bool = True) -> None:
        self.law, self.rng, self.open_loop = law, rng, open_loop
        self.requests, self.seconds = 0, 0.0

    def records(self, rate: float, n: int) -> tuple[list[RequestRecord], float, float]:
        """A level of ``n`` measured requests at ``rate``: their records, the client's mean in flight over
        the measured ones (Little's law) and the level's simulated seconds."""
        lead = max(2, round(n * LEAD_SHARE))
        gaps = self.rng.exponential(1.0 / rate, lead + 2 * n)  # the cool-down: arrivals go on
        arrival = np.cumsum(gaps)
        served = simulate(arrival, N_OUT, self.law)
        m = slice(lead, lead + n)
        ends = float(served.last_s[m].max())
        while arrival[-1] < ends and len(arrival) < lead + 20 * n:  # a queue that grew: more cool-down
            arrival = np.concatenate([arrival, arrival[-1] + np.cumsum(self.rng.exponential(1.0 / rate, n))])
            served = simulate(arrival, N_OUT, self.law)
            ends = float(served.last_s[m].max())
        ttft, e2e, tpot = served.ttft_ms[m], served.e2e_ms[m], served.tpot_ms[m]
        recs = [
            RequestRecord(str(i), "measure", 1, ttft_ms=float(ttft[i]), e2e_ms=float(e2e[i]),
                          last_token_ms=float(ttft[i] + tpot[i] * (N_OUT - 1)), sent_ms=float(arrival[lead + i] * 1e3),
                          output_tokens=N_OUT)
            for i in range(n)
        ]  # fmt: skip
        self.requests += lead + n
        seconds = ends - float(arrival[0])
        self.seconds += seconds
        return recs, rate * float(np.mean(e2e)) / 1e3, seconds

    def closed_records(self, users: float, n: int) -> tuple[list[RequestRecord], float, float]:
        """A closed-loop level: ``users`` send at once and again as each answer ends, until the ``n``
        measured (the first sent) ended; its records, the users in flight and its simulated seconds."""
        c = round(users)
        served = closed_loop(c, np.full(n + c, N_OUT), self.law)
        m = slice(0, n)
        ttft, e2e, tpot = served.ttft_ms[m], served.e2e_ms[m], served.tpot_ms[m]
        recs = [
            RequestRecord(str(i), "measure", c, ttft_ms=float(ttft[i]), e2e_ms=float(e2e[i]),
                          last_token_ms=float(ttft[i] + tpot[i] * (N_OUT - 1)),
                          sent_ms=float(served.arrival_s[i] * 1e3) + i * 1e-6, output_tokens=N_OUT)
            for i in range(n)
        ]  # fmt: skip
        seconds = float(served.last_s[m].max())
        self.requests += n
        self.seconds += seconds
        return recs, float(c), seconds

    async def run_level(self, load: float, n: int) -> LevelOutcome:
        """What capacity's run_level gives its probe: the window cut, the length judged."""
        open_loop = self.open_loop
        recs, in_flight, seconds = self.records(load, n) if open_loop else self.closed_records(load, n)
        kept, _, window = steady_window(recs, open_loop, cut=True)
        judge_length(window, len(kept), in_flight)
        summary = LevelSummary(concurrency=1 if open_loop else round(load), rate=load if open_loop else None,
                               duration_s=seconds, delivery=DeliveryStats(mean_in_flight=in_flight))  # fmt: skip
        summary.window = window
        return LevelOutcome(summary, kept)


def seatrial_search(lv: Level, start: float, budget: int = 4) -> float | None:
    first, rate = first_run(TARGET, CONFIDENCE), lv.open_loop
    s, probes = Search(start, PRECISION, integer=not rate), list[Probe]()
    while (at := s.next_load()) is not None:
        looks = Looks(TARGET, CONFIDENCE, rate, first, budget * first, in_flight=forecast(probes, at, rate))
        p = asyncio.run(probe(lv.run_level, at, SLO, looks))
        probes.append(p)
        s.record(at, p.verdict == "MEETS")
    return s.lower


def one_run_search(lv: Level, start: float, wilson_rule: bool) -> float | None:
    n = first_run(TARGET, CONFIDENCE)
    s = Search(start, PRECISION, integer=not lv.open_loop)
    while (at := s.next_load()) is not None:
        recs, _, _ = lv.records(at, n) if lv.open_loop else lv.closed_records(at, n)
        good = sum(is_good(r, SLO) for r in recs)
        met = wilson(good, n, CONFIDENCE)[0] >= TARGET if wilson_rule else good / n >= TARGET
        s.record(at, met)
    return s.lower


def report(name: str, truth: float, found: list[float | None], lv: Level, searches: int, wall: float) -> None:
    below = sum(c is None or c <= truth for c in found)
    lo, hi = wilson(below, searches, 0.95)
    ratios = [c / truth for c in found if c is not None]
    med = statistics.median(ratios) if ratios else float("nan")
    print(f"  {name}: at or below the truth {below}/{searches} = {below / searches:.1%} [{lo:.1%}, {hi:.1%}]; "
          f"answer / truth median {med:.3f} (min {min(ratios, default=float('nan')):.3f}, max "
          f"{max(ratios, default=float('nan')):.3f}); a search: {lv.requests / searches:.0f} requests, "
          f"{lv.seconds / searches / 60:.1f} simulated min ({wall:.0f} s to compute all)")  # fmt: skip
    if name.startswith("seatrial"):
        print(f"    targets: coverage >= 95% {'met' if below / searches >= 0.95 else 'NOT met'}, median >= 0.85 "
              f"{'met' if med >= 0.85 else 'NOT met'}")  # fmt: skip


def closed_truth(law: BatchLaw, requests: int = 100_000) -> tuple[int, float]:
    """The most users whose long-run attainment holds the target (MSER-5 burn-in), and that attainment."""
    def att(c: int) -> float:
        served = closed_loop(c, np.full(requests, N_OUT), law)
        return float(served.good(SLO)[mser5(served.ttft_ms):].mean())

    lo, hi = 1, 2 * law.slots
    while att(hi) >= TARGET:
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if att(mid) >= TARGET else (lo, mid)
    return lo, att(lo)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--searches", type=int, default=100)
    ap.add_argument("--laws", default=",".join(LAWS))
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--loop", choices=("open", "closed"), default="open")
    ap.add_argument("--probe-budgets", default="4",
                    help="seatrial's probe budget as multiples of its first run (capacity's default is 4), e.g. 4,40,400")
    ap.add_argument("--seatrial-only", action="store_true", help="leave out the point-estimate and plain-Wilson searches")
    a = ap.parse_args()
    open_loop = a.loop == "open"
    print(f"SLO {SLO} for {TARGET:.0%}, confidence {CONFIDENCE}, precision {PRECISION}, {N_OUT} output tokens, "
          f"{a.searches} searches a procedure, starts at truth x 2^U(-2, 0)")  # fmt: skip
    for name in a.laws.split(","):
        law = LAWS[name]
        if open_loop:
            truth = true_capacity(law, N_OUT, SLO, TARGET)
            at_truth = simulate(np.cumsum(np.random.default_rng(2).exponential(1 / truth, 100_000)), N_OUT, law)
            held = truth * float(np.mean(at_truth.e2e_ms[len(at_truth.e2e_ms) // 2 :])) / 1e3
            said = f"true capacity {truth:.3f} req/s, {held:.1f} in flight there"
        else:
            users, att = closed_truth(law)
            truth, said = float(users), f"true capacity {users} users (long-run attainment {att:.3f})"
        print(f"{name} (slots {law.slots}, t0 {law.t0_s * 1e3:g} ms, a {law.a:g}), {a.loop} loop: {said}")
        rng = np.random.default_rng(a.seed)
        starts = truth * 2.0 ** rng.uniform(-2.0, 0.0, a.searches)
        budgets = [int(x) for x in a.probe_budgets.split(",")]
        procedures = {("seatrial" if b == 4 else f"seatrial, probe budget {b}x"): functools.partial(seatrial_search, budget=b)
                      for b in budgets}  # fmt: skip
        if not a.seatrial_only:
            procedures |= {"point estimate": lambda lv, st: one_run_search(lv, st, False),
                           "plain Wilson": lambda lv, st: one_run_search(lv, st, True)}  # fmt: skip
        for pname, run in procedures.items():
            lv, t0 = Level(law, np.random.default_rng(a.seed + 1), open_loop), time.perf_counter()
            found = [run(lv, float(st)) for st in starts]
            report(pname, truth, found, lv, a.searches, time.perf_counter() - t0)


if __name__ == "__main__":
    main()
