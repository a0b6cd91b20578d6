"""Attainment intervals over requests that shared a queue (issue 38 item 4): batches of the good/bad
series' own correlation time, at least 5 x the requests an open loop held in flight, in capacity's probes
and in bench's --goodput; a probe sizes its next run to what the interval needs at the design effect it saw.
"""

from __future__ import annotations

import asyncio
import math
import random
from statistics import NormalDist

from seatrial.capacity.looks import MAX_LOOKS, Looks, first_run, judge, look_confidence
from seatrial.capacity.probe import outcomes, probe
from seatrial.load.goodput import goodput
from seatrial.load.level import LevelOutcome
from seatrial.load.records import RequestRecord
from seatrial.runs.summaries.bench import DeliveryStats, LevelSummary
from seatrial.stats.proportions import OPEN_TAU_PER_OTHER, wilson, z_two_sided

SLO = {"ttft_ms": 100.0}


def records(outcomes: list[bool], start: float = 0.0) -> list[RequestRecord]:
    """One record per outcome, sent 10 ms apart, good ones at TTFT 50 ms, bad ones at 500 ms; listed in
    reverse so that only an ordering by send time puts them back."""
    rows = [
        RequestRecord(
            f"r{i}",
            "measure",
            1,
            ttft_ms=50.0 if ok else 500.0,
            e2e_ms=600.0,
            sent_ms=start + 10.0 * i,
            output_tokens=4,
            worker=i % 2,
        )
        for i, ok in enumerate(outcomes)
    ]
    return rows[::-1]


def width(ci: list[float] | tuple[float, float]) -> float:
    return ci[1] - ci[0]


def test_bad_stretches_widen_the_goodput_interval_beyond_wilson() -> None:
    # 240 requests, 90% good, the bad ones in 4 stretches of 6 (a queue that stayed long): the series'
    # correlation time is several requests, so the interval is wider than the independent Wilson one,
    # although two client workers alternated (clustering by worker would see two alike clusters)
    pattern = ([True] * 54 + [False] * 6) * 4
    g = goodput(records(pattern), SLO, 10.0)
    lo, hi = wilson(216, 240)
    assert g.good == 216 and g.total == 240
    assert width(g.attainment_ci) > 1.5 * (hi - lo), (g.attainment_ci, (lo, hi), g.method)
    assert "design effect" in g.method or "clusters" in g.method


def test_an_open_loops_in_flight_floors_the_design_effect() -> None:
    # independent outcomes keep about the Wilson interval; held at 9 in flight by an open loop they are
    # counted as correlated over at least 5 x the 8 others
    rng = random.Random(3)
    pattern = [rng.random() < 0.9 for _ in range(400)]
    closed = goodput(records(pattern), SLO, 10.0)
    opened = goodput(records(pattern), SLO, 10.0, in_flight=9.0, open_loop=True)
    assert width(closed.attainment_ci) < 1.3 * width(wilson(sum(pattern), 400)), closed
    assert f"design effect {OPEN_TAU_PER_OTHER * 8:.3g}" in opened.method
    assert width(opened.attainment_ci) > 4 * width(closed.attainment_ci)


def test_the_probes_judge_uses_each_runs_in_flight() -> None:
    runs = [records([i % 10 != 0 for i in range(300)]), records([i % 10 != 0 for i in range(300)], 5000.0)]
    series = [outcomes(r, SLO) for r in runs]
    alone = judge(series, [1.0, 1.0], 0.85, 0.95)
    queued = judge(series, [30.0, 10.0], 0.85, 0.95)
    assert alone.verdict == "MEETS" and queued.verdict == "INCONCLUSIVE", (alone, queued)
    assert queued.share.deff == 30.0  # the larger of the runs' correlation times


def outcome(n: int, in_flight: float) -> LevelOutcome:
    summary = LevelSummary(concurrency=1, delivery=DeliveryStats(mean_in_flight=in_flight))
    return LevelOutcome(summary, records([True] * n))


def test_a_probe_sizes_its_next_run_to_what_the_interval_needs() -> None:
    asked: list[int] = []

    async def run_level(load: float, size: int) -> LevelOutcome:
        asked.append(size)
        return outcome(size, 5.0)

    def looks(open_loop: bool, most: int) -> Looks:
        return Looks(0.9, 0.95, open_loop, first, most)

    first = first_run(0.9, 0.95)
    # an open loop at 5 in flight: design effect 5 x 4 = 20, and the second look at 1 - 0.05 / 4: the
    # second run asks for 20 x first x (z(0.9875) / z(0.975))^2 in all
    grow = (NormalDist().inv_cdf(1 - 0.0125 / 2) / NormalDist().inv_cdf(1 - 0.025 / 2)) ** 2
    p = asyncio.run(probe(run_level, 2.0, SLO, looks(True, 100 * first)))
    assert asked == [first, math.ceil(20 * first * grow) - first] and p.verdict == "MEETS", (asked, p.verdict)
    assert "look 2 at 0.9875" in p.method, p.method
    asked.clear()
    capped = asyncio.run(probe(run_level, 2.0, SLO, looks(True, 4 * first)))
    assert asked == [first, 3 * first] and capped.verdict == "INCONCLUSIVE", (asked, capped.verdict)
    asked.clear()
    # the same server in a closed loop: a floor of 0.5 x 4 = 2, and all good: the first run decides
    closed = asyncio.run(probe(run_level, 2.0, SLO, looks(False, 4 * first)))
    assert asked == [first] and closed.verdict == "MEETS", (asked, closed.verdict)


def test_an_overloaded_run_misses_at_once_whatever_its_share() -> None:
    """All good, alone in flight: the first look MEETS; the same run with a queue that kept growing
    (load.window) MISSES at once, with no second run."""
    from seatrial.runs.summaries.bench import LevelWindow

    asked: list[int] = []

    def level(size: int, overloaded: bool) -> LevelOutcome:
        asked.append(size)
        o = outcome(size, 1.0)
        o.summary.window = LevelWindow(stationary=not overloaded, overloaded=overloaded)
        return o

    async def steady(load: float, size: int) -> LevelOutcome:
        return level(size, False)

    async def growing(load: float, size: int) -> LevelOutcome:
        return level(size, True)

    first = first_run(0.9, 0.95)
    assert asyncio.run(probe(steady, 2.0, SLO, Looks(0.9, 0.95, True, first, 4 * first))).verdict == "MEETS"
    asked.clear()
    p = asyncio.run(probe(growing, 2.0, SLO, Looks(0.9, 0.95, True, first, 4 * first)))
    assert asked == [first] and p.verdict == "MISSES" and p.overloaded and p.attainment == 1.0, (asked, p)


def test_each_look_spends_half_the_error_left() -> None:
    """Look j at 1 - (1 - c) / 2^j: the one-sided errors of every look sum to at most the one of a single
    look at c, however many; the first run is sized for the first look, so it needs more requests than one
    sized for a single look at c."""
    spent = sum((1 - look_confidence(0.95, j)) / 2 for j in range(1, 60))
    assert look_confidence(0.95, 1) == 0.975 and look_confidence(0.95, 3) == 1 - 0.05 / 8
    assert spent <= 0.025 and spent > 0.0249
    # a probe with a large budget stops at its MAX_LOOKS-th look, whose quantile is still finite
    assert math.isfinite(z_two_sided(look_confidence(0.95, MAX_LOOKS)))
    looks = Looks(0.9, 0.95, True, 10, 10**9)
    for _ in range(MAX_LOOKS):
        assert looks.next_size() > 0
        looks.add([True] * 9 + [False], 1.0)  # a share of 0.9 at a target of 0.9: never decided
    assert looks.judged is not None and looks.judged.verdict == "INCONCLUSIVE" and looks.next_size() == 0
    assert first_run(0.9, 0.95) > requests_for_single(0.9, 0.95)
    # a series that the plain confidence MEETS at its second look, and the second look's does not
    runs = [[i % 20 != 0 for i in range(250)], [i % 20 != 0 for i in range(250)]]
    assert judge(runs, [1.0, 1.0], 0.92, 0.95).verdict == "MEETS"
    assert judge(runs, [1.0, 1.0], 0.92, look_confidence(0.95, 2)).verdict == "INCONCLUSIVE"


def requests_for_single(target: float, confidence: float) -> int:
    from seatrial.capacity.looks import requests_for

    return requests_for(target, confidence)


def test_a_closed_loop_runs_expected_length_comes_from_the_last_level() -> None:
    from seatrial.capacity.run import closed_run_s

    last = LevelOutcome(LevelSummary(concurrency=8, duration_s=50.0), records([True] * 100))
    # 0.5 s a request at 8 users: 400 requests at 8 users take 200 s, at 16 users about half that
    assert closed_run_s([last], 8, 400) == 200.0 and closed_run_s([last], 16, 400) == 100.0
    assert closed_run_s([], 8, 400) == 0.0
