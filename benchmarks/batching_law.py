"""The continuous-batching law of the synthetic server (seatrial.testing.batching), simulated exactly, and
its true steady-state capacity for an SLO and an attainment.

``simulate``: an event simulation of the law, step by step in the law's own time (runs of steps in
which nothing is admitted and nothing leaves are taken at once): ``slots`` requests run, the rest wait
first come first served and are admitted only when a step starts; a step of ``b`` running requests
takes t0 (1 + a (b - 1)); a request's ``prefill_steps``-th step emits its first token, each later step
one more; an idle engine starts a step when a request arrives. Returns each request's first and last
token times.

``true_capacity``: the highest Poisson rate whose long-run share of good requests (TTFT, TPOT, E2E
within the SLO) holds the attainment: ``arrivals`` (default 400,000) at each rate, the same unit gaps
scaled by the rate (common random numbers: the share falls with the rate), the warm-up cut by MSER-5 on
the TTFT series (White 1997: the truncation that minimises the remaining batch means' variance over the
squared count, batches of 5, searched over the first half), then bisection on the rate.

    PYTHONPATH=src python benchmarks/batching_law.py --slots 64 --step-ms 20 --growth 0.01 \
        --output-len 64 --slo ttft_ms:500,tpot_ms:40 --attainment 0.9
"""

from __future__ import annotations

import argparse
import collections
import heapq
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seatrial.stats import steady
from seatrial.testing.batching import BatchLaw


@dataclass
class Served:
    arrival_s: np.ndarray
    first_s: np.ndarray  # first token
    last_s: np.ndarray  # last token: the request's end
    n_out: np.ndarray

    @property
    def ttft_ms(self) -> np.ndarray:
        return (self.first_s - self.arrival_s) * 1e3

    @property
    def e2e_ms(self) -> np.ndarray:
        return (self.last_s - self.arrival_s) * 1e3

    @property
    def tpot_ms(self) -> np.ndarray:
        gaps = np.maximum(self.n_out - 1, 1)
        return np.where(self.n_out > 1, (self.last_s - self.first_s) * 1e3 / gaps, 0.0)

    def good(self, slo: dict[str, float]) -> np.ndarray:
        ok = np.ones(len(self.arrival_s), dtype=bool)
        for name, bound in slo.items():
            ok &= getattr(self, name) <= bound
        return ok


def simulate(arrival_s: np.ndarray, n_out: int | np.ndarray, law: BatchLaw) -> Served:
    """Every request's first and last token times under ``law`` (``arrival_s`` sorted)."""
    arr = np.asarray(arrival_s, dtype=float)
    n = np.broadcast_to(np.asarray(n_out, dtype=np.int64), arr.shape).copy()
    total, p, c = len(arr), law.prefill_steps, law.slots
    admit = np.empty(total, dtype=np.int64)
    seg_k: list[int] = []  # runs of steps of one length: first step index, start time, step length
    seg_t: list[float] = []
    seg_dt: list[float] = []
    waiting: collections.deque[int] = collections.deque()
    leaving: list[int] = []  # heap of the step index after which a running request leaves
    i, k, t = 0, 0, 0.0
    while i < total or waiting or leaving:
        if not leaving and not waiting:
            t = max(t, float(arr[i]))  # idle: a step starts at the arrival
        while i < total and arr[i] <= t:
            waiting.append(i)
            i += 1
        while waiting and len(leaving) < c:
            r = waiting.popleft()
            admit[r] = k
            heapq.heappush(leaving, k + p + int(n[r]) - 2)
        dt = law.step_s(len(leaving))
        m = leaving[0] - k + 1  # steps until the next request leaves
        if not waiting and i < total and len(leaving) < c:  # a free slot: the next arrival's step
            m = min(m, max(1, math.ceil((arr[i] - t) / dt)))
        seg_k.append(k)
        seg_t.append(t)
        seg_dt.append(dt)
        t += m * dt
        k += m
        while leaving and leaving[0] < k:
            heapq.heappop(leaving)
    ks, ts, dts = np.asarray(seg_k), np.asarray(seg_t), np.asarray(seg_dt)

    def step_end(step: np.ndarray) -> np.ndarray:
        j = np.searchsorted(ks, step, side="right") - 1
        return ts[j] + (step - ks[j] + 1) * dts[j]

    first = step_end(admit + p - 1)
    return Served(arr, first, step_end(admit + p + n - 2), n)


def closed_loop(users: int, n_out: np.ndarray, law: BatchLaw) -> Served:
    """The same law under a closed loop: ``users`` send at once, and each sends its next request the moment
    its last one ends (no think time), until ``len(n_out)`` requests were sent (in send order)."""
    n = np.asarray(n_out, dtype=np.int64)
    total, p, c = len(n), law.prefill_steps, law.slots
    arr, admit = np.zeros(total), np.empty(total, dtype=np.int64)
    seg_k: list[int] = []
    seg_t: list[float] = []
    seg_dt: list[float] = []
    waiting: collections.deque[int] = collections.deque(range(min(users, total)))
    sent = len(waiting)
    leaving: list[tuple[int, int]] = []  # (the step index after which it leaves, request)
    k, t = 0, 0.0
    while waiting or leaving:
        while waiting and len(leaving) < c:
            r = waiting.popleft()
            admit[r] = k
            heapq.heappush(leaving, (k + p + int(n[r]) - 2, r))
        dt = law.step_s(len(leaving))
        m = leaving[0][0] - k + 1
        seg_k.append(k)
        seg_t.append(t)
        seg_dt.append(dt)
        t += m * dt
        k += m
        while leaving and leaving[0][0] < k:
            heapq.heappop(leaving)
            if sent < total:  # that user's next request, sent as its last one ended
                arr[sent] = t
                waiting.append(sent)
                sent += 1
    ks, ts, dts = np.asarray(seg_k), np.asarray(seg_t), np.asarray(seg_dt)

    def step_end(step: np.ndarray) -> np.ndarray:
        j = np.searchsorted(ks, step, side="right") - 1
        return ts[j] + (step - ks[j] + 1) * dts[j]

    return Served(arr, step_end(admit + p - 1), step_end(admit + p + n - 2), n)


def mser5(series: np.ndarray) -> int:
    """MSER-5's warm-up: how many leading observations to drop (a multiple of 5, at most half): seatrial's
    own (seatrial.stats.steady)."""
    return steady.mser5(series).cut


def attainment(law: BatchLaw, rate: float, unit_gaps: np.ndarray, n_out: int, slo: dict[str, float]) -> float:
    """The long-run share of good requests at ``rate`` (its warm-up cut by MSER-5 on the TTFT series)."""
    served = simulate(np.cumsum(unit_gaps) / rate, n_out, law)
    cut = mser5(served.ttft_ms)
    return float(served.good(slo)[cut:].mean())


def throughput_limit(law: BatchLaw, n_out: int) -> float:
    """Requests per second a full batch completes: no steady state above it."""
    return law.slots / ((law.prefill_steps + n_out - 1) * law.step_s(law.slots))


def true_capacity(
    law: BatchLaw, n_out: int, slo: dict[str, float], target: float, arrivals: int = 400_000, seed: int = 1,
    rel_tol: float = 1e-3,
) -> float:  # fmt: skip
    """The highest Poisson rate whose long-run attainment holds ``target`` (bisection to ``rel_tol``)."""
    gaps = np.random.default_rng(seed).exponential(1.0, arrivals)
    lo, hi = 0.0, throughput_limit(law, n_out)
    while hi - lo > rel_tol * hi:
        mid = (lo + hi) / 2
        if attainment(law, mid, gaps, n_out, slo) >= target:
            lo = mid
        else:
            hi = mid
    return lo


def main() -> None:
    from seatrial.load.goodput import parse_slo

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--slots", type=int, default=64)
    ap.add_argument("--step-ms", type=float, default=20.0)
    ap.add_argument("--growth", type=float, default=0.01, help="a in t0 (1 + a (b - 1))")
    ap.add_argument("--prefill-steps", type=int, default=1)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--slo", default="ttft_ms:500,tpot_ms:40")
    ap.add_argument("--attainment", type=float, default=0.9)
    ap.add_argument("--arrivals", type=int, default=400_000)
    ap.add_argument("--seeds", type=int, default=1, help="independent truths (their spread is the truth's error)")
    a = ap.parse_args()
    law = BatchLaw(a.slots, a.step_ms / 1e3, a.growth, a.prefill_steps)
    slo = parse_slo(a.slo)
    started = time.perf_counter()
    truths = [true_capacity(law, a.output_len, slo, a.attainment, a.arrivals, seed) for seed in range(1, a.seeds + 1)]
    cap = float(np.mean(truths))
    served = simulate(np.cumsum(np.random.default_rng(9).exponential(1.0, a.arrivals)) / cap, a.output_len, law)
    cut = mser5(served.ttft_ms)
    in_flight = cap * float(served.e2e_ms[cut:].mean()) / 1e3
    print(f"law: {law}; {a.output_len} output tokens; SLO {slo} for {a.attainment:.0%}")
    print(f"true capacity {cap:.4g} req/s (seeds {', '.join(f'{x:.4g}' for x in truths)}; {a.arrivals:,} arrivals "
          f"each, MSER-5 warm-up {cut:,} requests at the truth); in flight there (Little) {in_flight:.1f}; "
          f"a full batch's throughput {throughput_limit(law, a.output_len):.4g} req/s; {time.perf_counter() - started:.0f} s")  # fmt: skip


if __name__ == "__main__":
    main()
