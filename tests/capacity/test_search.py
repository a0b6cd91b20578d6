"""The capacity search on its own: doubling, bisection, going down, whole users, its stops."""

from __future__ import annotations

import pytest

from seatrial.capacity.looks import MIN_REQUESTS, requests_for
from seatrial.capacity.search import Search
from seatrial.stats.proportions import wilson


def run(search: Search, capacity: float) -> list[float]:
    seen = []
    while (load := search.next_load()) is not None:
        seen.append(load)
        search.record(load, load <= capacity)
    return seen


def test_doubles_then_bisects_to_the_precision_and_never_reports_above_the_truth() -> None:
    s = Search(first=1.0, precision=0.05)
    seen = run(s, capacity=13.3)
    assert seen[:5] == [1, 2, 4, 8, 16]
    assert s.lower is not None and s.upper is not None and s.lower <= 13.3 < s.upper
    assert s.upper / s.lower - 1 <= 0.05 and "within 5%" in (s.stop_reason or "")


def test_concurrency_mode_probes_whole_users_and_stops_between_neighbours() -> None:
    s = Search(first=1.0, precision=0.01, integer=True)
    seen = run(s, capacity=6)
    assert all(x == int(x) for x in seen) and (s.lower, s.upper) == (6, 7)
    assert "no whole number" in (s.stop_reason or "") or "within" in (s.stop_reason or "")


def test_a_first_probe_that_misses_goes_down_then_gives_up() -> None:
    s = Search(first=8.0, precision=0.05)
    assert run(s, capacity=3.0)[:3] == [8, 4, 2] and s.lower is not None and s.lower <= 3.0
    never = Search(first=8.0, precision=0.05)
    seen = run(never, capacity=0.0)
    assert never.lower is None and min(seen) >= 8 / 16 and "no probe met" in (never.stop_reason or "")


def test_a_search_never_goes_below_its_floor_and_ends_below_it() -> None:
    s = Search(first=2.0, precision=0.05, floor=0.5)
    assert run(s, capacity=0.1) == [2, 1, 0.5] and s.early == "floor" and s.lower is None
    assert s.stop_reason == "no probe met the target down to the floor 0.5: below 0.5 req/s"
    odd = Search(first=2.0, precision=0.05, floor=0.7)  # halving would pass it: the floor itself is probed
    assert run(odd, capacity=0.1) == [2, 1, 0.7] and "below 0.7 req/s" in (odd.stop_reason or "")
    users = Search(first=8.0, precision=0.05, integer=True, unit="users", floor=3)
    assert run(users, capacity=1) == [8, 4, 3] and "below 3 users" in (users.stop_reason or "")
    met = Search(first=2.0, precision=0.05, floor=0.5)
    assert min(run(met, capacity=0.6)) == 0.5 and met.early is None and met.lower is not None and met.lower <= 0.6


def test_a_spent_time_budget_ends_the_search_with_what_it_knows() -> None:
    s = Search(first=1.0, precision=0.01)
    for load, met in ((1, True), (2, True), (4, True), (8, False), (6, False)):
        assert s.next_load() == load
        s.record(load, met)
    s.out_of_time(1203.0, 1200.0)
    assert s.early == "budget" and (s.lower, s.upper) == (4, 6)
    assert s.stop_reason == "the time budget (20 min) was spent: between 4 and 6 req/s after 20.1 min"
    down = Search(first=1.0, precision=0.01)
    down.record(1.0, False)
    down.out_of_time(60.0, 60.0)
    assert "below 1 req/s after 1.0 min" in (down.stop_reason or "")


def test_the_highest_allowed_load_and_the_probe_budget_end_a_search() -> None:
    capped = Search(first=1.0, precision=0.05, max_load=5.0)
    assert run(capped, capacity=100)[-1] == 5.0 and "up to the highest allowed, 5" in (capped.stop_reason or "")
    short = Search(first=1.0, precision=0.0001, max_probes=6)
    assert len(run(short, capacity=13.3)) == 6 and "6 probes" in (short.stop_reason or "")


@pytest.mark.parametrize(("target", "confidence"), [(0.9, 0.95), (0.5, 0.8), (0.99, 0.95)])
def test_a_probe_is_sized_so_its_interval_can_clear_the_target(target: float, confidence: float) -> None:
    n = requests_for(target, confidence)
    p = (1 + target) / 2
    assert wilson(p * n, n, confidence)[0] >= target
    assert n == MIN_REQUESTS or wilson(p * n / 2, n / 2, confidence)[0] < target  # not twice what it needs


@pytest.mark.parametrize("mode", ["rate", "concurrency"])
def test_the_capacity_reported_is_the_brackets_lower_end_never_its_midpoint(mode: str) -> None:
    """Catches a capacity judged on the bracket's midpoint (or its upper end): what a run reports is the
    highest load shown to meet, and the bracket's upper end beside it, from the search that found them."""
    from seatrial.capacity.config import CapacityConfig
    from seatrial.capacity.run import CapacityRun
    from seatrial.load.config import BenchConfig
    from seatrial.load.level import NoProgress

    s = Search(first=1.0, precision=0.05, integer=mode == "concurrency")
    run(s, capacity=13.3)
    assert s.lower is not None and s.upper is not None and s.lower < s.upper
    cfg = BenchConfig.model_validate({"target": {"url": "http://127.0.0.1:9"}})
    ccfg = CapacityConfig.model_validate({"slo": "ttft_ms:100", "mode": mode})
    cap = CapacityRun(cfg, ccfg, None, lambda line: None, NoProgress())._write(s, None, final=True).capacity
    got = (cap.rate_req_s, cap.upper_rate_req_s) if mode == "rate" else (cap.concurrency, cap.upper_concurrency)
    assert cap.found and got == (s.lower, s.upper), (got, s.lower, s.upper)
