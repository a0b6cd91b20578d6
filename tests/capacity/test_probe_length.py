"""A run's length by what is in flight (issue 38 item 3): at least 10x the requests a load holds in flight,
forecast from the probes before it, corrected by what each run held (client or server); a run shorter than
that never MEETS, and the level says so."""

from __future__ import annotations

import asyncio

from tests.capacity.test_probe_intervals import SLO, records

from seatrial.capacity.looks import BUDGET_RUNS, Looks, first_run
from seatrial.capacity.probe import probe
from seatrial.capacity.run import forecast
from seatrial.load.level import LevelOutcome
from seatrial.load.window import STEADY_MULTIPLE, held_in_flight, judge_length
from seatrial.runs.summaries.bench import DeliveryStats, LevelSummary, LevelWindow, ServerView
from seatrial.runs.summaries.capacity import Probe

FIRST = first_run(0.9, 0.95)


def level(size: int, held: float, good: bool = True) -> LevelOutcome:
    """A run of ``size`` requests, all good (or all bad), that held ``held`` in flight (its window's figure;
    the client's mean is 1, so only the window's figure can make it long)."""
    summary = LevelSummary(concurrency=1, delivery=DeliveryStats(mean_in_flight=1.0))
    summary.window = LevelWindow(stationary=True, in_flight=held)
    return LevelOutcome(summary, records([good] * size))


def run(held: float, forecast_in_flight: float, good: bool = True) -> tuple[list[int], Probe]:
    asked: list[int] = []

    async def run_level(load: float, size: int) -> LevelOutcome:
        asked.append(size)
        return level(size, held, good)

    looks = Looks(0.9, 0.95, True, FIRST, 4 * FIRST, in_flight=forecast_in_flight)
    return asked, asyncio.run(probe(run_level, 5.0, SLO, looks))


def test_a_forecast_in_flight_sets_the_first_run_and_the_budget() -> None:
    asked, p = run(60.0, 60.0)
    assert asked == [STEADY_MULTIPLE * 60] and p.verdict == "MEETS" and not p.short, (asked, p.verdict)
    # 100 in flight: the 4 x first budget is too small for one run; the budget grows to BUDGET_RUNS runs
    assert 4 * FIRST < STEADY_MULTIPLE * 100
    asked, p = run(100.0, 100.0)
    assert asked == [STEADY_MULTIPLE * 100] and p.verdict == "MEETS", asked
    looks = Looks(0.9, 0.95, True, FIRST, 4 * FIRST, in_flight=100.0)
    assert looks.next_size() == STEADY_MULTIPLE * 100 and BUDGET_RUNS * STEADY_MULTIPLE * 100 > 4 * FIRST
    # a budget the user set (--max-probe-requests) is kept: the run is cut to it (and cannot MEET)
    assert Looks(0.9, 0.95, True, FIRST, 60, in_flight=100.0, fixed_budget=True).next_size() == 60


def test_a_run_shorter_than_ten_times_its_in_flight_never_meets() -> None:
    # no forecast; the first run held 60 in flight over FIRST (< 600) requests, all good: no MEETS on it,
    # and the next run is as long as the first showed it must be
    asked, p = run(60.0, 0.0)
    assert asked[0] == FIRST and asked[1] >= STEADY_MULTIPLE * 60, asked
    assert p.verdict == "MEETS" and p.runs == 2 and p.held_in_flight == 60.0, (asked, p)


def test_a_short_run_may_still_miss() -> None:
    asked, p = run(60.0, 0.0, good=False)
    assert asked == [FIRST] and p.verdict == "MISSES" and p.short, (asked, p.verdict)


def probe_at(rate: float, held: float) -> Probe:
    _, p = run(held, held)
    return p.model_copy(update={"rate_req_s": rate})


def test_the_forecast_scales_the_nearest_probe_by_littles_law() -> None:
    assert forecast([], 7.0, rate=False) == 7.0  # a closed loop holds its users
    assert forecast([], 7.0, rate=True) == 0.0  # nothing seen yet
    probes = [probe_at(2.0, 4.0), probe_at(8.0, 40.0)]
    assert forecast(probes, 10.0, rate=True) == 50.0  # the nearest (8/s), not the first (2/s -> 20)
    assert forecast(probes, 3.0, rate=True) == 6.0
    # a probe that missed held a queue, no steady figure: not scaled (235 in flight at 29.6/s made 1,175
    # requests of the next probe at 14.8/s in a vLLM-CPU test)
    missed = probe_at(9.0, 235.0).model_copy(update={"verdict": "MISSES"})
    assert forecast([*probes, missed], 9.0, rate=True) == 45.0


def test_the_server_running_and_waiting_count_where_larger() -> None:
    assert held_in_flight(5.0, ServerView(running_max=64.0)) == 5.0  # a maximum is no mean
    assert held_in_flight(5.0, ServerView(in_system_mean=84.0)) == 84.0
    assert held_in_flight(90.0, ServerView(in_system_mean=64.0)) == 90.0
    w = LevelWindow()
    note = judge_length(w, 500, 84.0)
    assert w.short and w.in_flight == 84.0 and note is not None and "84" in note, note
    w = LevelWindow()
    assert judge_length(w, 840, 84.0) is None and not w.short


def test_an_inconclusive_probe_says_what_its_interval_would_need() -> None:
    """All good over a budget too small for its design effect: INCONCLUSIVE, with the requests that at that
    design effect would clear the target at its next look; a share at the target says nothing."""
    from seatrial.capacity.looks import requests_to_meet
    from seatrial.stats.proportions import Share, wilson

    async def run_level(load: float, size: int) -> LevelOutcome:
        return level(size, 2.0)

    summary = LevelSummary(concurrency=1, delivery=DeliveryStats(mean_in_flight=30.0))

    async def queued(load: float, size: int) -> LevelOutcome:
        return LevelOutcome(summary, records([True] * size))

    p = asyncio.run(probe(queued, 5.0, SLO, Looks(0.9, 0.95, True, FIRST, 2 * FIRST)))
    deff = p.requests / p.n_eff
    assert p.verdict == "INCONCLUSIVE" and p.needs_requests is not None and p.needs_requests > p.requests, p
    assert wilson(p.needs_requests / deff, p.needs_requests / deff, 1 - 0.05 / 8)[0] >= 0.9
    assert wilson(0.9 * p.needs_requests / deff, p.needs_requests / deff, 1 - 0.05 / 8)[0] < 0.9
    met = asyncio.run(probe(run_level, 5.0, SLO, Looks(0.9, 0.95, True, FIRST, 4 * FIRST)))
    assert met.verdict == "MEETS" and met.needs_requests is None
    at_target = Share(90, 100, 0.9, (0.8, 0.95), 100.0, 1.0, 1, "wilson")
    assert requests_to_meet(at_target, 0.9, 0.95) is None
