"""Offer load without knowing HTTP: a closed loop of C users, or open-loop arrivals (Poisson or constant).

The scheduler hands each request spec to ``send(spec, record)`` and reports every finished record to
``on_record`` the moment it completes. It also measures how truly the load was delivered: the
time-weighted number of requests in flight, and the lag between when a request should have gone
out and when it did.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

from seatrial.load.records import Phase, RequestRecord
from seatrial.load.workloads import RequestSpec

SendFn = Callable[[RequestSpec, RequestRecord], Awaitable[RequestRecord]]
RecordFn = Callable[[RequestRecord], None]


@dataclass
class Delivery:
    """How the offered load was delivered during the dispatch window (first send to last send)."""

    window_s: float = 0.0
    mean_in_flight: float = 0.0
    dispatched: int = 0
    in_flight: int = 0  # requests in flight now (read by the /metrics scraper)
    scheduled_rate: float | None = None  # open loop: arrivals per second of the schedule itself
    achieved_rate: float | None = None  # open loop: arrivals per second actually sent
    _events: list[tuple[int, int]] = field(default_factory=list, repr=False)

    def mark(self, delta: int) -> None:
        self.in_flight += delta
        self._events.append((time.perf_counter_ns(), delta))

    def close(self, last_dispatch_ns: int) -> None:
        """Time-weighted mean of in-flight requests between the first and the last dispatch."""
        events = sorted(self._events)
        if not events:
            return
        start, level, area = events[0][0], 0, 0.0
        prev = start
        for t, delta in events:
            if t > last_dispatch_ns:
                break
            area += level * (t - prev)
            level, prev = level + delta, t
        area += level * max(0, last_dispatch_ns - prev)
        span = last_dispatch_ns - start
        self.window_s = span / 1e9
        self.mean_in_flight = area / span if span > 0 else float(level)


@dataclass
class LevelPlan:
    """One measured level: ``concurrency`` users in a closed loop, or arrivals at ``rate`` per second.

    A worker's share of a level (``load.distributed``) names its arrivals' ``offsets_s`` (from the common
    start) and the level-wide ``indices`` of its specs, so its request ids are the level's own."""

    concurrency: int
    rate: float | None = None
    arrival: str = "poisson"
    seed: int = 0
    offsets_s: list[float] | None = None
    indices: list[int] | None = None


def arrival_offsets_s(n: int, rate: float, arrival: str, seed: int) -> list[float]:
    """Send times in seconds from the level start: exponential gaps (Poisson) or 1/rate (constant)."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for _ in range(n):
        out.append(t)
        t += rng.expovariate(rate) if arrival == "poisson" else 1.0 / rate
    return out


async def run_level(
    specs: list[RequestSpec],
    plan: LevelPlan,
    phase: Phase,
    id_prefix: str,
    send: SendFn,
    on_record: RecordFn,
    delivery: Delivery | None = None,
) -> tuple[list[RequestRecord], Delivery]:
    """Send every spec under ``plan``; return the records in completion order and the delivery stats
    (into ``delivery`` when given, so that others can watch it during the level). The heap is frozen
    first (:func:`frozen_heap`), before the level's clock starts."""
    with frozen_heap():
        return await _run(specs, plan, phase, id_prefix, send, on_record, delivery or Delivery())


async def _run(
    specs: list[RequestSpec],
    plan: LevelPlan,
    phase: Phase,
    id_prefix: str,
    send: SendFn,
    on_record: RecordFn,
    delivery: Delivery,
) -> tuple[list[RequestRecord], Delivery]:
    records: list[RequestRecord] = []
    t0 = time.perf_counter_ns()
    last_dispatch = [t0]

    async def one(i: int, scheduled_ns: int, cap_wait_ns: int = 0) -> None:
        spec = specs[i]
        rec = RequestRecord(
            request_id=f"{id_prefix}-{plan.indices[i] if plan.indices else i:05d}",
            phase=phase,
            concurrency=plan.concurrency,
            expected_output_tokens=spec.output_len if spec.ignore_eos else None,
            expected_prompt_tokens=spec.expected_prompt_tokens,
            kind=spec.kind,
            scheduled_ms=(scheduled_ns - t0) / 1e6,
            cap_wait_ms=cap_wait_ns / 1e6,
        )
        now = time.perf_counter_ns()
        rec.sent_ms = (now - t0) / 1e6
        last_dispatch[0] = max(last_dispatch[0], now)
        delivery.mark(+1)
        try:
            await send(spec, rec)
        except asyncio.CancelledError:
            rec.error = "interrupted"
            raise
        finally:
            delivery.mark(-1)
            records.append(rec)
            on_record(rec)

    if plan.rate is None:
        await _closed_loop(len(specs), plan.concurrency, one)
    else:
        await _open_loop(len(specs), plan, t0, one)
        delivery.scheduled_rate, delivery.achieved_rate = arrival_rates(records)
    delivery.dispatched = len(records)
    delivery.close(last_dispatch[0])
    return records, delivery


def arrival_rates(records: list[RequestRecord]) -> tuple[float | None, float | None]:
    """Arrivals per second of the schedule (its first to last due time) and of what was sent (first
    to last send): a Poisson schedule's own rate differs from the nominal one by chance, so the sent
    rate is judged against the schedule's."""
    if len(records) < 2:
        return None, None
    due = sorted(r.scheduled_ms for r in records)
    sent = sorted(r.sent_ms for r in records)
    gaps = len(records) - 1
    rate = lambda span_ms: gaps / (span_ms / 1000) if span_ms > 0 else None  # noqa: E731
    return rate(due[-1] - due[0]), rate(sent[-1] - sent[0])


async def _closed_loop(n: int, users: int, one: Callable[..., Awaitable[None]]) -> None:
    counter = iter(range(n))

    async def user() -> None:
        ready = time.perf_counter_ns()
        for i in counter:
            await one(i, ready)
            ready = time.perf_counter_ns()

    await asyncio.gather(*(user() for _ in range(min(users, n))))


async def _open_loop(n: int, plan: LevelPlan, t0: int, one: Callable[..., Awaitable[None]]) -> None:
    assert plan.rate is not None
    cap = asyncio.Semaphore(plan.concurrency)
    tasks = []

    async def gated(i: int, due: int) -> None:
        # Waiting for a free slot under --max-concurrency is back-pressure, not client lag: it is kept
        # apart (cap_wait_ms) from the lag, and the schedule keeps its due time, so a cap that holds the
        # arrivals back shows in the achieved rate.
        waited_from = time.perf_counter_ns()
        async with cap:
            await one(i, due, max(0, time.perf_counter_ns() - max(waited_from, due)))

    offsets = (
        plan.offsets_s
        if plan.offsets_s is not None
        else arrival_offsets_s(n, plan.rate, plan.arrival, plan.seed)
    )
    for i, offset in enumerate(offsets):
        due = t0 + int(offset * 1e9)
        delay = (due - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(gated(i, due)))
    await asyncio.gather(*tasks)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Keep the garbage collector's full passes off the objects that exist before a level.

    A full collection walks every tracked object; with seatrial's imports that paused the event loop
    50-65 ms at 512 streams, longer than a 50 ms ITL, so every stream's next token waited unread.
    ``gc.freeze`` moves what exists now out of the collector's reach until the level ends; new objects
    are still collected. Nested use is the outer one's: a caller that freezes before its own clock
    (a worker before it says ready, bench before its CPU window) keeps the sweep out of both.
    """
    if _FROZEN:
        yield
        return
    gc.collect()
    gc.freeze()
    _FROZEN.append(True)
    try:
        yield
    finally:
        _FROZEN.clear()
        gc.unfreeze()


_FROZEN: list[bool] = []  # non-empty while a frozen_heap() is active in this process
