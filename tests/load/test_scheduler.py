"""The scheduler on a fake sender (no HTTP): delivered concurrency and arrival processes."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import LevelPlan, arrival_offsets_s, run_level
from seatrial.load.workloads import RequestSpec


def _run(n: int, plan: LevelPlan, hold_s: float) -> tuple[list[RequestRecord], float, list[int]]:
    peak = [0, 0]
    seen: list[RequestRecord] = []

    async def send(spec: RequestSpec, rec: RequestRecord) -> RequestRecord:
        peak[0] += 1
        peak[1] = max(peak[1], peak[0])
        await asyncio.sleep(hold_s)
        peak[0] -= 1
        return rec

    specs = [RequestSpec("p", 4) for _ in range(n)]
    records, delivery = asyncio.run(run_level(specs, plan, "measure", "t", send, seen.append))
    return records, delivery.mean_in_flight, peak


def test_closed_loop_keeps_exactly_c_in_flight() -> None:
    records, mean_in_flight, peak = _run(40, LevelPlan(concurrency=4), hold_s=0.02)
    assert len(records) == 40 and peak[1] == 4
    assert mean_in_flight == pytest.approx(4.0, rel=0.1)
    assert sorted(r.request_id for r in records) == [f"t-{i:05d}" for i in range(40)]


def test_open_loop_caps_in_flight_and_records_schedule() -> None:
    records, _, peak = _run(20, LevelPlan(concurrency=2, rate=200.0, arrival="constant"), hold_s=0.05)
    assert peak[1] == 2
    scheduled = sorted(r.scheduled_ms for r in records)
    assert scheduled[0] == pytest.approx(0.0, abs=5.0)


def test_poisson_offsets_have_the_asked_rate() -> None:
    offsets = arrival_offsets_s(20_000, rate=50.0, arrival="poisson", seed=1)
    gaps = np.diff(offsets)
    assert gaps.mean() == pytest.approx(1 / 50, rel=0.03)
    assert gaps.std() == pytest.approx(1 / 50, rel=0.05)  # exponential: std == mean
    const = np.diff(arrival_offsets_s(10, rate=4.0, arrival="constant", seed=0))
    assert np.allclose(const, 0.25)
