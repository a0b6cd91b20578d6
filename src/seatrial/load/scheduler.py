"""Offer load without knowing HTTP: a closed loop of C users, open-loop arrivals (Poisson, constant,
gamma; a ramp of rates), or a timed workload's own schedule (a trace's send times, sessions' turns).

The scheduler hands each request spec to ``send(spec, record)`` and reports every finished record to
``on_record`` the moment it completes. It also measures how truly the load was delivered: the
time-weighted number of requests in flight, and the lateness of each request (when it should have gone
out, ``scheduled_ms``, against when it did, ``sent_ms``).
A spec that names the request it follows (``after``: a conversation's previous turn) is sent once that
request's answer has arrived and the level's think time has passed, and not before its own ``at_s``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import math
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
    scheduled_cv: float | None = None  # open loop: coefficient of variation of the schedule's gaps
    achieved_cv: float | None = None  # open loop: the same of the gaps between sends
    _events: list[tuple[int, int]] = field(default_factory=list, repr=False)

    @classmethod
    def from_events(cls, events: list[tuple[int, int]]) -> Delivery:
        """A delivery of in-flight changes taken elsewhere (``(perf_counter_ns, +1 | -1)``: the workers'
        timelines, on one clock), to be closed by :meth:`close`."""
        return cls(_events=list(events))

    @property
    def events(self) -> list[tuple[int, int]]:
        """The in-flight changes so far, ``(perf_counter_ns, +1 | -1)`` (a copy)."""
        return list(self._events)

    def note_arrivals(self, records: list[RequestRecord]) -> None:
        """An open loop's rates and burstiness: of the schedule, and of what was sent."""
        self.scheduled_rate, self.achieved_rate = arrival_rates(records)
        self.scheduled_cv = gaps_cv([r.scheduled_ms for r in records])
        self.achieved_cv = gaps_cv([r.sent_ms for r in records])

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


Ramp = tuple[str, float, float]  # ("linear" | "exponential", rate at the first request, at the last)


@dataclass
class LevelLoad:
    """The load of one measured level: ``concurrency`` users in a closed loop, arrivals at ``rate`` per second (their
    gaps by ``arrival``: poisson, constant, or gamma of shape ``burstiness``; a ``ramp`` of rates instead
    of one), or a ``timed`` workload's own schedule (its specs' ``at_s`` and ``after``; ``think_s``
    between an answer and the next turn). In an open loop ``concurrency`` caps the requests in flight.

    A worker's share of a level (``load.distributed``) names its arrivals' ``offsets_s`` (from the common
    start) and the level-wide ``indices`` of its specs, so its request ids are the level's own. The first
    ``lead`` requests of the level (by level-wide index) are its warm-up, sent in the same stream as the
    measured ones (an open loop's queue is then in its steady state when measurement begins). Requests
    from level-wide index ``cool_from`` on are its cool-down: sent as the load goes on (the users keep
    sending, the arrivals keep coming) while the measured ones finish, so that the last measured requests
    are served under the load the level names, not by a draining server; once every measured request is
    done no more are sent and those in flight finish (a cancelled stream cost llama-server connections),
    and they are never measured (:func:`cooldown_count`)."""

    concurrency: int
    rate: float | None = None
    arrival: str = "poisson"
    seed: int = 0
    offsets_s: list[float] | None = None
    indices: list[int] | None = None
    lead: int = 0
    burstiness: float = 1.0
    ramp: Ramp | None = None
    timed: bool = False
    think_s: float = 0.0
    cool_from: int | None = None

    @property
    def open_loop(self) -> bool:
        return self.rate is not None or self.timed

    @property
    def gap_shape(self) -> float | None:
        """The gamma shape of the named arrival process's gaps (Poisson 1, constant inf); None where the
        level has no one law (a ramp, a timed workload's own schedule, a closed loop)."""
        if self.rate is None or self.timed or self.ramp is not None:
            return None
        return {"poisson": 1.0, "constant": math.inf}.get(self.arrival, self.burstiness)


def cooldown_count(level: LevelLoad, measured: int) -> int:
    """Requests built beyond a level's measured ones to hold its load while they finish (only those needed
    are sent): a closed loop's users, twice over; a quarter of an open loop's arrivals (a drain shorter than
    a quarter of the level, as in any level of at least 4x the requests in flight). None for a ramp of
    rates or a timed workload's own schedule (a trace, conversations): their load is their own."""
    if level.timed or level.ramp is not None or measured < 1:
        return 0
    if level.open_loop:
        return max(1, measured // 4)
    return 2 * min(level.concurrency, measured)


def ramp_rate(ramp: Ramp, i: int, n: int) -> float:
    """The rate for request ``i`` of ``n`` (vLLM's ramp-up): R0 + (R1 - R0) p, or R0 (R1 / R0)^p,
    p = i / (n - 1)."""
    kind, r0, r1 = ramp
    p = i / max(n - 1, 1)
    return r0 + (r1 - r0) * p if kind == "linear" else r0 * (r1 / r0) ** p


def _gap(rng: random.Random, rate: float, arrival: str, burstiness: float) -> float:
    if arrival == "poisson":
        return rng.expovariate(rate)
    if arrival == "gamma":
        return rng.gammavariate(burstiness, 1.0 / (rate * burstiness))
    return 1.0 / rate


def arrival_offsets_s(
    n: int, rate: float, arrival: str, seed: int, burstiness: float = 1.0, ramp: Ramp | None = None
) -> list[float]:
    """Send times in seconds from the level start. Gaps: exponential (poisson), 1/rate (constant), or gamma
    with shape ``burstiness`` K and mean 1/rate (gamma: vLLM's --burstiness, coefficient of variation
    1/sqrt(K), K < 1 burstier than Poisson). With a ``ramp`` the gap before request i has the mean
    1/``ramp_rate(i)``. Unlike vLLM's, the first request goes at 0 and the schedule is not rescaled to end
    at n/rate: what was sent is judged against the schedule's own rate."""
    rng = random.Random(seed)
    t, out = 0.0, []
    for i in range(n):
        if i:
            t += _gap(rng, rate if ramp is None else ramp_rate(ramp, i, n), arrival, burstiness)
        out.append(t)
    return out


def schedule_offsets(load: LevelLoad, specs: list[RequestSpec]) -> list[float]:
    """Each spec's send time from the level start in an open loop (of a spec that follows another, the
    earliest): the load's own, the specs' (timed), or drawn from the load's arrival process."""
    if load.offsets_s is not None:
        return load.offsets_s
    if load.timed:
        return [s.at_s or 0.0 for s in specs]
    assert load.rate is not None
    return arrival_offsets_s(len(specs), load.rate, load.arrival, load.seed, load.burstiness, load.ramp)


async def run_level(
    specs: list[RequestSpec],
    load: LevelLoad,
    phase: Phase,
    id_prefix: str,
    send: SendFn,
    on_record: RecordFn,
    delivery: Delivery | None = None,
    start_ns: int | None = None,
    level_index: int | None = None,
) -> tuple[list[RequestRecord], Delivery]:
    """Send every spec under ``load``; return the records in completion order and the delivery stats
    (into ``delivery`` when given, so that others can watch it during the level). The heap is frozen
    first (:func:`frozen_heap`), before the level's clock starts; the clock starts at ``start_ns``
    (``perf_counter_ns``; a worker's common start, so that a late start shows as lateness) or now.
    ``level_index``: the run's level, in every record's ``level`` (None: requests sent outside a level)."""
    with frozen_heap():
        return await _run(
            specs, load, phase, id_prefix, send, on_record, delivery or Delivery(), start_ns, level_index
        )


async def _run(
    specs: list[RequestSpec],
    load: LevelLoad,
    phase: Phase,
    id_prefix: str,
    send: SendFn,
    on_record: RecordFn,
    delivery: Delivery,
    start_ns: int | None = None,
    level_index: int | None = None,
) -> tuple[list[RequestRecord], Delivery]:
    records: list[RequestRecord] = []
    t0 = time.perf_counter_ns() if start_ns is None else start_ns
    last_dispatch = [t0]
    cool_from = load.cool_from if load.cool_from is not None else math.inf
    level_index_of = (lambda i: load.indices[i]) if load.indices else (lambda i: i)
    others = [  # not yet done, but the cool-down
        len(specs) if load.cool_from is None else sum(level_index_of(i) < cool_from for i in range(len(specs)))
    ]
    measured_done = asyncio.Event()
    if others[0] == 0:  # a worker's share of the cool-down alone
        measured_done.set()

    async def one(i: int, scheduled_ns: int, cap_wait_ns: int = 0) -> None:
        spec = specs[i]
        index = level_index_of(i)
        cooling = index >= cool_from
        if cooling and measured_done.is_set():
            return  # the level is over: a cool-down request not yet sent is never sent
        rec = RequestRecord(
            request_id=f"{id_prefix}-{index:05d}",
            phase="warmup" if index < load.lead else "cooldown" if cooling else phase,
            concurrency=load.concurrency,
            expected_output_tokens=spec.output_len if spec.ignore_eos else None,
            expected_prompt_tokens=spec.expected_prompt_tokens,
            kind=spec.kind,
            scheduled_ms=(scheduled_ns - t0) / 1e6,
            cap_wait_ms=cap_wait_ns / 1e6,
            trace_line=spec.trace_line,
            session=spec.session,
            turn=spec.turn,
            level=level_index,
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
            if not cooling:
                others[0] -= 1
                if others[0] == 0:
                    measured_done.set()

    if not load.open_loop:
        await _closed_loop(len(specs), load.concurrency, one)
    else:
        await _open_loop(specs, load, t0, one, measured_done if load.cool_from is not None else None)
        delivery.note_arrivals(records)
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


def gaps_cv(times_ms: list[float]) -> float | None:
    """Coefficient of variation (standard deviation over mean) of the gaps between sorted times: 1 for
    Poisson arrivals, 0 for constant ones, 1/sqrt(K) for gamma arrivals of shape K."""
    gaps = [b - a for a, b in itertools.pairwise(sorted(times_ms))]
    if len(gaps) < 2:
        return None
    mean = sum(gaps) / len(gaps)
    var = sum((g - mean) ** 2 for g in gaps) / (len(gaps) - 1)
    return var**0.5 / mean if mean > 0 else None


async def _closed_loop(n: int, users: int, one: Callable[..., Awaitable[None]]) -> None:
    counter = iter(range(n))

    async def user() -> None:
        ready = time.perf_counter_ns()
        for i in counter:
            await one(i, ready)
            ready = time.perf_counter_ns()

    await asyncio.gather(*(user() for _ in range(min(users, n))))


async def _sleep_until(due_ns: int) -> None:
    delay = (due_ns - time.perf_counter_ns()) / 1e9
    if delay > 0:
        await asyncio.sleep(delay)


async def _open_loop(
    specs: list[RequestSpec],
    load: LevelLoad,
    t0: int,
    one: Callable[..., Awaitable[None]],
    done: asyncio.Event | None = None,
) -> None:
    """Sends each spec at its due time (``done``: the measured requests are done, so no arrival is due
    any more: the cool-down's in flight finish, no more are sent)."""
    cap = asyncio.Semaphore(load.concurrency)
    offsets = schedule_offsets(load, specs)
    due = [t0 + int(off * 1e9) for off in offsets]
    position = {level: i for i, level in enumerate(load.indices)} if load.indices else None
    parent = {i: s.after if position is None else position[s.after] for i, s in enumerate(specs)
              if s.after is not None}  # fmt: skip
    loop = asyncio.get_running_loop()
    answered: dict[int, asyncio.Future[int]] = {p: loop.create_future() for p in parent.values()}

    async def gated(i: int, due_ns: int) -> None:
        # Waiting for a free slot under --max-concurrency is back-pressure, not client lag: it is kept
        # apart (cap_wait_ms) from the lag, and the schedule keeps its due time, so a cap that holds the
        # arrivals back shows in the achieved rate.
        waited_from, full = time.perf_counter_ns(), cap.locked()
        try:
            async with cap:
                waited = time.perf_counter_ns() - max(waited_from, due_ns) if full else 0
                await one(i, due_ns, max(0, waited))
        finally:
            if i in answered and not answered[i].done():
                answered[i].set_result(time.perf_counter_ns())

    async def follows(i: int) -> None:
        """A conversation's next turn: after the previous answer and the think time, not before its time."""
        answer_ns = await answered[parent[i]]
        due_ns = max(due[i], answer_ns + int(load.think_s * 1e9))
        await _sleep_until(due_ns)
        await gated(i, due_ns)

    tasks = [asyncio.create_task(follows(i)) for i in parent]
    try:
        for i in sorted((i for i in range(len(specs)) if i not in parent), key=lambda i: due[i]):
            await _sleep_until(due[i])
            if done is not None and done.is_set():
                break
            tasks.append(asyncio.create_task(gated(i, due[i])))
        await asyncio.gather(*tasks)
    finally:  # cancelled (an interrupt): so are the requests it had sent
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


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
