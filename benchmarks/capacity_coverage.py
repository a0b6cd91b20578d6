"""How often does `seatrial capacity`'s lower bound overstate the true capacity? The search's statistics
alone, by simulation: no server, no client, thousands of searches in a minute.

Each probe run is an M/D/s queue fed by Poisson arrivals at the probe's rate, from an empty server, with
the leading warm-up seatrial sends in rate mode (max(2, 25% of the run's requests), excluded); a request
is good when its wait for a slot plus its TTFT is within the SLO. The searches use seatrial's own pieces:
``Search`` (doubling, then bisection) and ``Looks`` (a probe's looks: the batch-clustered Wilson interval,
its run sizes, another run at the same rate while INCONCLUSIVE, up to 4x the first run's requests). The
true capacity is the highest rate whose long-run share of good requests (200,000 arrivals) holds the
target, found by bisection.

Two procedures side by side:
- ``alpha spending``: what seatrial does (capacity.looks: look j at 1 - (1 - confidence) / 2^j);
- ``plain per look``: every look at the plain confidence (seatrial before issue 38 item 5: a probe stops
  at its first verdict, so each of its looks may MEET by chance).
Printed per procedure: searches whose bound is at or below the truth (target >= 95%), answer / truth
(median; target >= 0.90), requests per search. The law by default is the one benchmarks/capacity_accuracy.py
serves (4 slots, TTFT 5.9 ms, 51.8 ms a request: its calibration on a quiet 16-core host).

    PYTHONPATH=src python benchmarks/capacity_coverage.py [--searches 400]
"""

from __future__ import annotations

import argparse
import heapq
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seatrial.capacity.looks import Looks, first_run
from seatrial.capacity.run import LEAD_SHARE
from seatrial.capacity.search import Search
from seatrial.load.records import RequestRecord


def queue_waits(rng: np.random.Generator, rate: float, n: int, slots: int, service_ms: float) -> tuple[np.ndarray, np.ndarray]:
    """Arrival times and waits for a slot of ``n`` Poisson arrivals at ``rate``/s into an empty M/D/s."""
    arrivals = np.cumsum(rng.exponential(1000.0 / rate, n))
    free = [0.0] * slots
    waits = np.empty(n)
    for i, t in enumerate(arrivals):
        start = max(t, heapq.heappop(free))
        heapq.heappush(free, start + service_ms)
        waits[i] = start - t
    return arrivals, waits


def run(rng: np.random.Generator, rate: float, n: int, a: argparse.Namespace) -> list[RequestRecord]:
    lead = max(2, round(n * LEAD_SHARE))
    sent, waits = queue_waits(rng, rate, lead + n, a.slots, a.service_ms)
    return [RequestRecord(request_id=str(i), phase="measure", concurrency=1, sent_ms=float(sent[i]),
                          ttft_ms=float(waits[i] + a.ttft_ms), output_tokens=10)
            for i in range(lead, lead + n)]  # fmt: skip


LOOKS = 4  # a probe's budget: capacity's default max_probe_requests is 4x the first run's


class PlainLooks(Looks):
    """Every look at the plain confidence: no alpha spending."""

    def look_confidence(self, look: int) -> float:
        return self.confidence


def search(rng: np.random.Generator, a: argparse.Namespace, plain: bool) -> tuple[float | None, int]:
    first = first_run(a.attainment, a.confidence)
    slo = {"ttft_ms": a.slo_ms}
    s, spent = Search(a.start, a.precision), 0
    while (rate := s.next_load()) is not None:
        looks = (PlainLooks if plain else Looks)(a.attainment, a.confidence, True, first, LOOKS * first)
        while size := looks.next_size():
            ttft = np.array([r.ttft_ms for r in run(rng, rate, size, a)])
            in_flight = rate * (float(np.mean(ttft)) - a.ttft_ms + a.service_ms) / 1000  # Little's law
            looks.add((ttft <= slo["ttft_ms"]).tolist(), in_flight)
        spent += looks.used
        s.record(rate, looks.judged is not None and looks.judged.verdict == "MEETS")
    return s.lower, spent


def queue_capacity(slots: int, service_ms: float, ttft_ms: float, slo_ms: float, attainment: float) -> float:
    """The highest rate whose long-run share of requests with wait + TTFT within ``slo_ms`` holds
    ``attainment`` (200,000 arrivals per rate, bisection): the true capacity of that M/D/s law."""
    lo, hi = 0.1, slots * 1000.0 / service_ms
    for _ in range(30):
        mid = (lo + hi) / 2
        _, waits = queue_waits(np.random.default_rng(1), mid, 200_000, slots, service_ms)
        if float(np.mean(waits + ttft_ms <= slo_ms)) >= attainment:
            lo = mid
        else:
            hi = mid
    return lo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--searches", type=int, default=400)
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--service-ms", type=float, default=51.8)
    ap.add_argument("--ttft-ms", type=float, default=5.9)
    ap.add_argument("--slo-ms", type=float, default=30.0)
    ap.add_argument("--attainment", type=float, default=0.9)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--precision", type=float, default=0.1)
    ap.add_argument("--start", type=float, default=8.0)
    a = ap.parse_args()
    truth = queue_capacity(a.slots, a.service_ms, a.ttft_ms, a.slo_ms, a.attainment)
    print(f"M/D/{a.slots}: {a.service_ms:g} ms a request, TTFT {a.ttft_ms:g} ms; SLO ttft_ms <= {a.slo_ms:g} for "
          f"{a.attainment:.0%}; true capacity {truth:.2f} req/s; {a.searches} searches per procedure, "
          f"confidence {a.confidence:g}, precision {a.precision:g}")  # fmt: skip
    for name, plain in (("alpha spending (seatrial)", False), ("plain per look", True)):
        rng = np.random.default_rng(7)
        results = [search(rng, a, plain) for _ in range(a.searches)]
        found = [c for c, _ in results if c is not None]
        below = sum(c <= truth for c in found) + sum(c is None for c, _ in results)
        share = below / len(results)
        se = (share * (1 - share) / len(results)) ** 0.5
        ratios = [c / truth for c in found]
        print(f"{name}: at or below the truth {below}/{len(results)} = {share:.1%} (+/- {1.96 * se:.1%}, "
              f"target >= 95%); answer / truth median {statistics.median(ratios):.3f} (target >= 0.90), "
              f"min {min(ratios):.3f}, max {max(ratios):.3f}; requests per search median "
              f"{statistics.median(s for _, s in results):.0f}")  # fmt: skip
        met = [share >= 0.95, statistics.median(ratios) >= 0.90]
        print(f"  targets: coverage {'met' if met[0] else 'NOT met'}, median {'met' if met[1] else 'NOT met'}")


if __name__ == "__main__":
    main()
