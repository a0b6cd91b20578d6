"""One level's load from several client workers (processes on this host, or Ray actors on many), and the
exact merge of what they measured.

Split: min(workers, concurrency) workers take part (a worker with no user would be a share that sends
nothing); a closed loop's users go to them as evenly as they divide, and the level's requests by
cumulative bounds in proportion to the users (worker k sends requests [n*U_k/C, n*U_(k+1)/C) where U_k
is the users of the workers before it: exactly n in all, whatever n, C and the workers); an open loop's
arrival schedule (drawn once, here) goes round-robin, each worker keeping its arrivals' due times, and
the ``--max-concurrency`` cap splits like users (the workers' caps add up to it, never more; an uncapped
level stays uncapped on every worker). A conversation's turns (specs of one ``session``) stay together on
one worker: sessions go round-robin.
Start: every worker first gets ready (its share unpacked, its client open) and says so; once all are
ready the driver names one start time a margin ahead and sends it (a message of a few bytes, so no
worker's import, spawn or share transfer eats into the margin); every worker waits for it on its own
clock, corrected by its offset to the driver's (an NTP-style ping at the smallest round trip,
recorded). A worker that still began late says by how much (``start_late_ms``, and a note).
Merge: every worker's records are pooled, their times moved onto the driver's clock, and the level's
metrics are computed from the pool by the same code as for one client (never an average of the
workers' percentiles); the delivery (requests in flight) is the union of the workers' timelines.
A worker that dies leaves failed records for every request of its share it had not finished.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import Delivery, LevelLoad, schedule_offsets
from seatrial.load.share import Sending, WorkerClock, WorkerShare, WorkerStats
from seatrial.load.workloads import RequestSpec
from seatrial.runs.summaries.bench import WorkerTiming

START_MARGIN_S = 0.5
READY_TIMEOUT_S = 120.0  # a worker not ready by then is sent the start anyway (and says how late it began)
LATE_START_NOTE_MS = 10.0


@dataclass
class Clock:
    """A worker's clock against the driver's: ``wall_offset_ns`` = worker wall − driver wall."""

    worker: int
    wall_offset_ns: int = 0
    rtt_ns: int = 0
    where: str = ""  # host or node of the worker

    def to_json(self) -> dict[str, Any]:
        return {"worker": self.worker, "clock_offset_ms": self.wall_offset_ns / 1e6, "rtt_ms": self.rtt_ns / 1e6,
                "where": self.where}  # fmt: skip


def best_offset(samples: list[tuple[int, int, int]]) -> tuple[int, int]:
    """(offset, rtt) from (driver send, worker now, driver receive) wall-clock pings: the one with the
    smallest round trip, the worker's time against the midpoint."""
    t0, w, t1 = min(samples, key=lambda s: s[2] - s[0])
    return w - (t0 + t1) // 2, t1 - t0


def _even(total: int, parts: int) -> list[int]:
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def split(
    specs: list[RequestSpec], level: LevelLoad, workers: int, sending: Sending, clocks: dict[int, Clock] | None = None
) -> list[WorkerShare]:
    """Each worker's share: its users (or cap), specs with their level-wide indices, arrival offsets; what
    every worker sends alike, and the worker's clock offset (of ``clocks``, else 0). Every request index is
    in exactly one share; a worker left without requests gets no share."""
    shares = []
    for w, (users, mine, offsets) in enumerate(_parts(specs, level, workers)):
        if mine and users > 0:
            load = dataclasses.replace(level, concurrency=users, indices=mine, offsets_s=offsets, seed=0)
            shares.append(WorkerShare(worker=w, load=load, specs=[specs[i] for i in mine], sending=sending,
                                      wall_offset_ns=clocks[w].wall_offset_ns if clocks else 0))  # fmt: skip
    return shares


def _parts(specs: list[RequestSpec], level: LevelLoad, workers: int) -> list[tuple[int, list[int], list[float] | None]]:
    """Per worker taking part: its users (or its part of the cap), its level-wide indices, and in an open
    loop their arrival offsets."""
    n, cap = len(specs), max(1, level.concurrency)
    used = max(1, min(workers, cap))
    users = _even(cap, used)
    if not level.open_loop:  # contiguous blocks by users, of the measured requests and of the cool-down
        before = [sum(users[:w]) for w in range(used + 1)]
        cut = n if level.cool_from is None else level.cool_from
        block = lambda lo, hi, w: list(range(lo + (hi - lo) * before[w] // cap, lo + (hi - lo) * before[w + 1] // cap))  # noqa: E731
        return [(users[w], block(0, cut, w) + block(cut, n, w), None) for w in range(used)]
    offsets = schedule_offsets(level, specs)
    owner = _owners(specs, used)
    parts: list[tuple[int, list[int], list[float] | None]] = []
    for w in range(used):
        mine = [i for i in range(n) if owner[i] == w]
        mine_cap = len(mine) if level.concurrency >= n else users[w]  # uncapped stays uncapped
        parts.append((max(1, mine_cap), mine, [offsets[i] for i in mine]))
    return parts


def _owners(specs: list[RequestSpec], workers: int) -> list[int]:
    """The worker of each spec: round-robin by spec, a session's specs all with its first one's worker."""
    owner: list[int] = []
    sessions: dict[int, int] = {}
    for i, spec in enumerate(specs):
        if spec.session is None:
            owner.append(i % workers)
        else:
            owner.append(sessions.setdefault(spec.session, len(sessions) % workers))
    return owner


@dataclass
class Merge:
    """Collects the workers' records of one level, on the driver's clock."""

    clocks: dict[int, Clock]
    start_wall_ns: int
    start_perf_ns: int  # the same instant on the driver's perf_counter clock
    concurrency: int  # the level's (a worker's own share is smaller)
    records: list[RequestRecord] = field(default_factory=list)
    finished: set[str] = field(default_factory=set)
    events: list[tuple[int, int]] = field(default_factory=list)
    workers: list[WorkerTiming] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    late_ms: list[float] = field(default_factory=list)  # every worker's loop ticks, pooled

    def to_driver_ns(self, worker: int, perf_ns: int, mono_to_wall_ns: int) -> int:
        """A worker's perf_counter time on the driver's perf_counter clock."""
        wall = perf_ns + mono_to_wall_ns - self.clocks[worker].wall_offset_ns
        return wall - self.start_wall_ns + self.start_perf_ns

    def add(self, worker: int, rec: RequestRecord, clock: WorkerClock) -> RequestRecord:
        """One record from ``worker``, its times moved onto the driver's clock (in place): its send time,
        and its schedule and send offsets by one shift per worker: where its start (``clock.start_ns``) lies
        on the driver's clock against the common start (the error of the measured clock offset)."""
        rec.send_ns = self.to_driver_ns(worker, rec.send_ns, clock.mono_to_wall_ns)
        rec.worker, rec.concurrency = worker, self.concurrency
        shift_ms = (self.to_driver_ns(worker, clock.start_ns, clock.mono_to_wall_ns) - self.start_perf_ns) / 1e6
        rec.scheduled_ms += shift_ms
        rec.sent_ms += shift_ms
        self.records.append(rec)
        self.finished.add(rec.request_id)
        return rec

    def worker_done(self, stats: WorkerStats) -> None:
        worker, m2w = stats.worker, stats.mono_to_wall_ns
        self.events += [(self.to_driver_ns(worker, t, m2w), d) for t, d in stats.events]
        self.late_ms += stats.late_ms
        if stats.start_late_ms > LATE_START_NOTE_MS:
            self.notes.append(f"client worker {worker} began {stats.start_late_ms:.0f} ms after the common start: "
                              "its share's first requests went out late (the mean in flight shows what it cost)")  # fmt: skip
        lag = stats.model_dump(include={"loop_lag_ms_p99", "loop_lag_ms_max", "cpu_wait_ms"})
        self.workers.append(WorkerTiming(**self.clocks[worker].to_json(), requests=stats.requests, **lag,
                                         cpu_s=stats.cpu_s, start_late_ms=stats.start_late_ms))  # fmt: skip

    def worker_died(self, share: WorkerShare, why: str) -> list[RequestRecord]:
        """Failed records for the share's requests that never came back."""
        worker, sending, lost = share.worker, share.sending, []
        cool_from = share.load.cool_from
        for i, spec in zip(share.indices, share.specs, strict=True):
            rid = f"{sending.id_prefix}-{i:05d}"
            if rid in self.finished or (cool_from is not None and i >= cool_from):
                continue  # a cool-down request is no loss: it was never to be measured
            rec = RequestRecord(request_id=rid, phase=sending.phase, concurrency=self.concurrency,
                                expected_output_tokens=spec.output_len if spec.ignore_eos else None, kind=spec.kind,
                                error=f"client worker {worker} died before this request finished: {why}",
                                worker=worker, level=sending.level, send_ns=self.start_perf_ns)  # fmt: skip
            lost.append(rec)
            self.records.append(rec)
        self.notes.append(f"client worker {worker} died ({why}): {len(lost)} of its requests failed with it")
        self.workers.append(WorkerTiming(**self.clocks[worker].to_json(), died=why))
        return lost

    def delivery(self, open_loop: bool = False) -> Delivery:
        """The union of the workers' in-flight timelines, first to last dispatch; of an open loop, the
        pooled arrivals' rates and burstiness."""
        d = Delivery.from_events(self.events)
        sent = [r for r in self.records if r.error is None or "died" not in (r.error or "")]
        d.dispatched = len(self.records)
        if sent:
            d.close(max(r.send_ns for r in sent))
            if open_loop:
                d.note_arrivals(sent)
        return d


def start_times(margin_s: float = START_MARGIN_S) -> tuple[int, int]:
    """A common start (wall, and the same instant on this process's perf clock) ``margin_s`` from now."""
    wall, perf = time.time_ns(), time.perf_counter_ns()
    return wall + int(margin_s * 1e9), perf + int(margin_s * 1e9)
