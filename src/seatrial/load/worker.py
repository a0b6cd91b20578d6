"""A client worker's part of a level: the same streaming client and scheduler as a single client, on
its own event loop, in its own process (or Ray actor). Records go back as they complete (``emit``)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from seatrial.load.client import new_http
from seatrial.load.conversation import make_sender
from seatrial.load.looplag import LoopLag
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import Delivery, frozen_heap, run_level
from seatrial.load.share import WorkerClock, WorkerShare, WorkerStats

#: hands one finished record back, with where this worker's clock stood
Emit = Callable[[RequestRecord, WorkerClock], None]
#: says this worker is ready (share unpacked, client open) and waits for the driver's go: the common
#: start, in the driver's wall-clock ns, set once every worker of the level is ready
Ready = Callable[[], Awaitable[int]]


async def run_share(share: WorkerShare, emit: Emit, ready: Ready) -> WorkerStats:
    """Get ready, wait for the go, sleep to the common start (the driver's wall time, corrected by this
    worker's offset), then send the share; returns the timeline, the loop's lateness and how late this
    worker began after the common start."""
    sending = share.sending
    mono_to_wall = time.time_ns() - time.perf_counter_ns()
    async with new_http(sending.timeout_s, sending.stall_timeout_s, sending.stamps == "kernel") as http:
        sender = make_sender(http, sending.endpoint)
        with frozen_heap():  # swept before the ready, not after the start
            start_wall_ns = await ready()
            delay = (start_wall_ns + share.wall_offset_ns - time.time_ns()) / 1e9
            start_ns = time.perf_counter_ns() + int(delay * 1e9)  # the common start, on this clock
            clock = WorkerClock(mono_to_wall_ns=mono_to_wall, start_ns=start_ns)
            if delay > 0:
                await asyncio.sleep(delay)
            delivery, lag = Delivery(), LoopLag()
            cpu = time.process_time()
            async with lag.watching():  # from the common start: a late worker's requests show as late
                records, _ = await run_level(
                    share.specs, share.load, sending.phase, sending.id_prefix, sender,
                    lambda rec: emit(rec, clock), delivery, start_ns, sending.level,
                )  # fmt: skip
            cpu = time.process_time() - cpu
    return WorkerStats(worker=share.worker, requests=len(records), events=delivery.events, cpu_s=cpu,
                       mono_to_wall_ns=mono_to_wall, **lag.summary(), late_ms=lag.late_ms,
                       start_late_ms=max(0.0, -delay * 1000))  # fmt: skip
