"""The event-loop lateness self-check: a stalled client is seen and said, a free one is not flagged."""

from __future__ import annotations

import asyncio
import time

import pytest

from seatrial.load.looplag import TICK_S, LoopLag
from seatrial.load.metrics import client_timing


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
    assert LoopLag().summary() == {"loop_lag_ms_p99": None, "loop_lag_ms_max": None, "cpu_wait_ms": None}


def test_the_cpu_wait_of_the_loop_s_thread_is_read_from_the_kernel() -> None:
    """Linux's run-queue wait of the thread (``/proc/thread-self/schedstat``) over the watched span."""
    from seatrial.load.looplag import run_queue_wait_ns

    async def watch() -> LoopLag:
        async with LoopLag().watching() as lag:
            await asyncio.sleep(0.05)
        return lag

    lag = asyncio.run(watch())
    if run_queue_wait_ns() is None:
        pytest.skip("this kernel does not give a thread's run-queue wait")
    assert lag.cpu_wait_ms is not None and lag.cpu_wait_ms >= 0 and lag.summary()["cpu_wait_ms"] == lag.cpu_wait_ms


def test_a_stall_above_the_lag_limit_adds_a_note_and_keeps_the_figures() -> None:
    stalled = client_timing([], {"loop_lag_ms_p99": 240.0, "loop_lag_ms_max": 330.0}, max_lag_ms=50)
    assert stalled["loop_lag_ms_p99"] == 240.0 and "the client stalled" in stalled["note"]
    calm = client_timing([], {"loop_lag_ms_p99": 2.0, "loop_lag_ms_max": 9.0}, max_lag_ms=50)
    assert "note" not in calm and calm["loop_lag_ms_max"] == 9.0
