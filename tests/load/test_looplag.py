"""The event-loop lateness self-check: a stalled client is seen and said, a free one is not flagged;
the collector is kept off the objects older than a level while it is measured."""

from __future__ import annotations

import asyncio
import gc
import time
import weakref

import pytest

from seatrial.load import bench
from seatrial.load.bench import frozen_heap
from seatrial.load.config import BenchConfig
from seatrial.load.looplag import TICK_S, LoopLag
from seatrial.load.metrics import client_timing
from seatrial.load.records import RequestRecord
from seatrial.server.synthetic import SyntheticConfig, ThreadedServer


async def _watch(block_s: float) -> dict[str, float | None]:
    lag = LoopLag()
    async with lag.watching():
        await asyncio.sleep(0.05)
        time.sleep(block_s)  # a synchronous stall of the loop, as a starved process sees one
        await asyncio.sleep(0.05)
    return lag.summary()


def test_a_blocked_loop_shows_as_lateness_of_at_least_the_block() -> None:
    summary = asyncio.run(_watch(0.3))
    # the tick that spans the block wakes at least the block minus one tick late
    assert summary["loop_lag_ms_max"] is not None and summary["loop_lag_ms_max"] >= 300 - TICK_S * 1000


def test_no_ticks_no_figures() -> None:
    assert LoopLag().summary() == {"loop_lag_ms_p99": None, "loop_lag_ms_max": None}


def test_a_stall_above_the_lag_limit_adds_a_note_and_keeps_the_figures() -> None:
    stalled = client_timing([], {"loop_lag_ms_p99": 240.0, "loop_lag_ms_max": 330.0}, max_lag_ms=50)
    assert stalled["loop_lag_ms_p99"] == 240.0 and "the client stalled" in stalled["note"]
    calm = client_timing([], {"loop_lag_ms_p99": 2.0, "loop_lag_ms_max": 9.0}, max_lag_ms=50)
    assert "note" not in calm and calm["loop_lag_ms_max"] == 9.0


def test_frozen_heap_keeps_older_objects_out_of_collections_and_still_collects_new_garbage() -> None:
    older = [[i] for i in range(1000)]  # tracked containers that exist before the level
    assert gc.get_freeze_count() == 0
    with frozen_heap():
        assert gc.get_freeze_count() >= len(older)
        cycle: list[object] = []
        cycle.append(cycle)
        gone = weakref.ref(_Node(cycle))
        gc.collect()
        assert gone() is None  # garbage made during the level is still collected
    assert gc.get_freeze_count() == 0  # and what was frozen is the collector's again afterwards


class _Node:
    def __init__(self, other: object) -> None:
        self.me, self.other = self, other


def test_the_measured_requests_run_with_the_heap_frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, list[int]] = {"warmup": [], "measure": []}

    async def send(http: object, ep: object, spec: object, rec: RequestRecord) -> RequestRecord:
        seen[rec.phase].append(gc.get_freeze_count())
        return await real_send(http, ep, spec, rec)  # type: ignore[arg-type]

    real_send = bench.send
    monkeypatch.setattr(bench, "send", send)
    with ThreadedServer(SyntheticConfig(itl_s=0.001)) as srv:
        cfg = BenchConfig.model_validate(
            {
                "target": {"url": srv.url},
                "workload": {"name": "random", "input_len": 4, "output_len": 2},
                "load": {"concurrency": [2], "requests": 4, "warmup": 2},
            }
        )
        summary = asyncio.run(bench.run_bench(cfg))
    assert summary["levels"][0]["requests_ok"] == 4
    assert len(seen["measure"]) == 4 and min(seen["measure"]) > 0
    assert seen["warmup"] == [0, 0] and gc.get_freeze_count() == 0
