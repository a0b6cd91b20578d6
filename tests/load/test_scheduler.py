"""The scheduler on a fake sender (no HTTP): delivered concurrency, arrival processes, the frozen heap."""

from __future__ import annotations

import asyncio
import gc
import weakref

import numpy as np
import pytest

from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import Delivery, LevelLoad, arrival_offsets_s, frozen_heap, run_level
from seatrial.load.workloads import RequestSpec


def _run(n: int, load: LevelLoad, hold_s: float) -> tuple[list[RequestRecord], float, list[int]]:
    peak = [0, 0]
    seen: list[RequestRecord] = []

    async def send(spec: RequestSpec, rec: RequestRecord) -> RequestRecord:
        peak[0] += 1
        peak[1] = max(peak[1], peak[0])
        await asyncio.sleep(hold_s)
        peak[0] -= 1
        return rec

    specs = [RequestSpec("p", 4) for _ in range(n)]
    records, delivery = asyncio.run(run_level(specs, load, "measure", "t", send, seen.append))
    return records, delivery.mean_in_flight, peak


def test_closed_loop_keeps_exactly_c_in_flight() -> None:
    records, mean_in_flight, peak = _run(40, LevelLoad(concurrency=4), hold_s=0.02)
    assert len(records) == 40 and peak[1] == 4
    assert mean_in_flight == pytest.approx(4.0, rel=0.1)
    assert sorted(r.request_id for r in records) == [f"t-{i:05d}" for i in range(40)]


def test_a_delivery_from_events_taken_elsewhere_is_their_time_weighted_mean() -> None:
    """Merged workers' timelines: 1 in flight for 10 ns, 2 for 10 ns, 1 for 10 ns until the last dispatch."""
    events = [(0, 1), (10, 1), (20, -1), (40, -1)]
    delivery = Delivery.from_events(events)
    delivery.close(30)
    assert delivery.events == events and delivery.window_s == 30e-9
    assert delivery.mean_in_flight == pytest.approx(40 / 30)


def test_open_loop_caps_in_flight_and_records_schedule() -> None:
    records, _, peak = _run(20, LevelLoad(concurrency=2, rate=200.0, arrival="constant"), hold_s=0.05)
    assert peak[1] == 2
    scheduled = sorted(r.scheduled_ms for r in records)
    assert scheduled[0] == pytest.approx(0.0, abs=5.0)


def test_a_cap_that_holds_arrivals_back_shows_in_the_rate_and_makes_the_level_invalid() -> None:
    """Issue 16 item 13: 2 slots of 50 ms each carry 40 arrivals/s at most, not the asked 200/s. The
    schedule keeps its due times, the wait for a slot is not client lag, and the level is INVALID."""
    from seatrial.load.config import LoadConfig
    from seatrial.load.validity import invalid_reasons

    capped = LevelLoad(concurrency=2, rate=200.0, arrival="constant")
    specs = [RequestSpec("p", 4) for _ in range(20)]

    async def send(spec: RequestSpec, rec: RequestRecord) -> RequestRecord:
        await asyncio.sleep(0.05)
        rec.output_tokens = 4
        return rec

    records, delivery = asyncio.run(run_level(specs, capped, "measure", "t", send, lambda r: None))
    assert delivery.scheduled_rate == pytest.approx(200.0, rel=0.01)
    assert delivery.achieved_rate is not None and delivery.achieved_rate < 50.0
    assert max(r.scheduled_ms for r in records) == pytest.approx(95.0, abs=1.0)  # 19 / 200 s: not reset
    assert max(r.cap_wait_ms for r in records) > 300 and max(r.lag_ms for r in records) < 20
    load = LoadConfig(concurrency=[2], rate=200.0, max_concurrency=2, requests=20, max_lag_ms=50)
    reasons = invalid_reasons(records, delivery, load, 2, closed_loop=False)
    assert any("below the schedule's 200/s" in r and "the client delivered" in r for r in reasons), reasons
    # an uncapped level delivers its schedule (its send lateness is judged in test_arrivals on synthetic
    # records: here a 10 ms stall of this test's process in 95 ms of sends would be a late level)
    wide = LevelLoad(concurrency=20, rate=200.0, arrival="constant")
    records, delivery = asyncio.run(run_level(specs, wide, "measure", "w", send, lambda r: None))
    reasons = invalid_reasons(records, delivery, load, 20, closed_loop=False)
    assert not [r for r in reasons if "below the schedule's" in r], reasons


def test_poisson_offsets_have_the_asked_rate() -> None:
    offsets = arrival_offsets_s(20_000, rate=50.0, arrival="poisson", seed=1)
    gaps = np.diff(offsets)
    assert gaps.mean() == pytest.approx(1 / 50, rel=0.03)
    assert gaps.std() == pytest.approx(1 / 50, rel=0.05)  # exponential: std == mean
    const = np.diff(arrival_offsets_s(10, rate=4.0, arrival="constant", seed=0))
    assert np.allclose(const, 0.25)


def test_frozen_heap_keeps_older_objects_out_of_collections_and_still_collects_new_garbage() -> None:
    older = [[i] for i in range(1000)]  # tracked containers that exist before the level
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        assert gc.get_freeze_count() >= len(older)
        gone = weakref.ref(_Cycle())
        gc.collect()
        assert gone() is None  # garbage made during the level is still collected
    assert gc.get_freeze_count() == 0  # and what was frozen is the collector's again afterwards


def test_a_nested_frozen_heap_is_the_outer_ones() -> None:
    """A worker freezes before it says ready; the level's own freeze inside must neither sweep again
    nor unfreeze early."""
    with frozen_heap():
        outer = gc.get_freeze_count()
        sweeps = gc.get_stats()[2]["collections"]
        with frozen_heap():
            assert gc.get_freeze_count() == outer and gc.get_stats()[2]["collections"] == sweeps
        assert gc.get_freeze_count() == outer  # still frozen after the inner one ended
    assert gc.get_freeze_count() == 0


class _Cycle:
    def __init__(self) -> None:
        self.me = self  # only the collector can free it


@pytest.mark.parametrize("rate", [None, 200.0])
def test_every_request_of_a_level_is_sent_with_the_heap_frozen(rate: float | None) -> None:
    counts: list[int] = []

    async def send(spec: RequestSpec, rec: RequestRecord) -> RequestRecord:
        counts.append(gc.get_freeze_count())
        await asyncio.sleep(0.001)
        return rec

    specs = [RequestSpec("p", 1, None, "x", True) for _ in range(6)]
    asyncio.run(run_level(specs, LevelLoad(2, rate), "measure", "F", send, lambda rec: None))
    assert len(counts) == 6 and min(counts) > 0
    assert gc.get_freeze_count() == 0
