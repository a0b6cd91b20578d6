"""How late the client's event loop ran: a ticker asks to wake every few milliseconds and records by
how much each wake-up was late. A late loop reads late, so a long stall shows which side held tokens
back when a whole stream arrives at once: the client (a high loop lag) or the server (none). Where the
loop's thread was runnable but waited for a CPU (Linux's run-queue wait, ``cpu_wait_ms``), the host was
too busy to run the client: its lateness is not its own work."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import numpy as np

TICK_S = 0.005


class LoopLag:
    """Lateness of each tick, in ms, while :meth:`watching` is active."""

    def __init__(self) -> None:
        self.late_ms: list[float] = []
        self.cpu_wait_ms: float | None = None

    @contextlib.asynccontextmanager
    async def watching(self) -> AsyncIterator[LoopLag]:
        task = asyncio.create_task(self._tick())
        waited = run_queue_wait_ns()
        try:
            yield self
        finally:
            now = run_queue_wait_ns()
            if waited is not None and now is not None:
                self.cpu_wait_ms = (now - waited) / 1e6
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _tick(self) -> None:
        while True:
            start = time.perf_counter()
            await asyncio.sleep(TICK_S)
            self.late_ms.append(max(0.0, (time.perf_counter() - start - TICK_S) * 1000))

    def summary(self) -> dict[str, float | None]:
        return lag_summary(self.late_ms) | {"cpu_wait_ms": self.cpu_wait_ms}


def run_queue_wait_ns() -> int | None:
    """Nanoseconds this thread has been runnable without a CPU (``/proc/thread-self/schedstat``, Linux);
    None where the kernel does not say."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None


def lag_summary(late_ms: list[float]) -> dict[str, float | None]:
    """p99 and max lateness of the ticks (of one loop, or pooled from several: never their p99s averaged)."""
    if not late_ms:
        return {"loop_lag_ms_p99": None, "loop_lag_ms_max": None}
    late = np.asarray(late_ms)
    return {"loop_lag_ms_p99": float(np.percentile(late, 99)), "loop_lag_ms_max": float(late.max())}
