"""A client worker's part of a level: the same streaming client and scheduler as a single client, on
its own event loop, in its own process (or Ray actor). Records go back as they complete (``emit``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from seatrial.load.bench import new_http
from seatrial.load.client import Endpoint, send
from seatrial.load.looplag import LoopLag
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import Delivery, LevelPlan, frozen_heap, run_level
from seatrial.load.workloads import RequestSpec

Emit = Callable[[dict[str, Any]], None]
#: says this worker is ready (share unpacked, client open) and waits for the driver's go: the common
#: start, in the driver's wall-clock ns, set once every worker of the level is ready
Ready = Callable[[], Awaitable[int]]


async def run_share(share: dict[str, Any], emit: Emit, ready: Ready) -> dict[str, Any]:
    """Get ready, wait for the go, sleep to the common start (the driver's wall time, corrected by this
    worker's offset), then send the share; returns the timeline, the loop's lateness and how late this
    worker began after the common start. ``share`` holds the endpoint, the specs and the plan (see
    :func:`seatrial.load.distributed.split`)."""
    ep = Endpoint(
        share["url"], share["model"], share["endpoint"], share["headers"], share["continuous_usage"]
    )
    specs = [RequestSpec(**s) for s in share["specs"]]
    plan = LevelPlan(
        share["concurrency"], share["rate"], share["arrival"], 0, share.get("offsets_s"), share["indices"]
    )
    mono_to_wall = time.time_ns() - time.perf_counter_ns()
    async with new_http(share["timeout_s"], share["stall_timeout_s"], share["stamps"] == "kernel") as http:

        async def sender(spec: RequestSpec, rec: RequestRecord) -> RequestRecord:
            return await send(http, ep, spec, rec)

        def keep(rec: RequestRecord) -> None:
            emit({**rec.to_json(), "send_ns": rec.send_ns, "mono_to_wall_ns": mono_to_wall})

        with frozen_heap():  # swept before the ready, not after the start
            start_wall_ns = await ready()
            delay = (start_wall_ns + share["wall_offset_ns"] - time.time_ns()) / 1e9
            if delay > 0:
                await asyncio.sleep(delay)
            delivery, lag = Delivery(), LoopLag()
            cpu = time.process_time()
            async with lag.watching():
                records, _ = await run_level(
                    specs, plan, share["phase"], share["id_prefix"], sender, keep, delivery
                )
            cpu = time.process_time() - cpu
    return {"worker": share["worker"], "requests": len(records), "events": delivery._events, "cpu_s": cpu,
            "mono_to_wall_ns": mono_to_wall, "loop_lag": lag.summary(), "late_ms": lag.late_ms,
            "start_late_ms": max(0.0, -delay * 1000)}  # fmt: skip
