"""One level's load from several client workers (processes on this host, or Ray actors on many), and the
exact merge of what they measured.

Split: a closed loop's users go to the workers as evenly as they divide, and the level's requests in
proportion to each worker's users; an open loop's arrival schedule (drawn once, here) goes round-robin,
each worker keeping its arrivals' due times, and the ``--max-concurrency`` cap splits like users.
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

import time
from dataclasses import dataclass, field
from typing import Any

from seatrial.load.records import Phase, RequestRecord
from seatrial.load.scheduler import Delivery, LevelPlan, arrival_offsets_s
from seatrial.load.workloads import RequestSpec

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


def split(specs: list[RequestSpec], plan: LevelPlan, workers: int) -> list[dict[str, Any]]:
    """Each worker's share: its users (or cap), specs with their level-wide indices, arrival offsets."""
    n = len(specs)
    users = _even(plan.concurrency, workers)
    shares: list[dict[str, Any]]
    if plan.rate is None:
        counts = [round(n * u / plan.concurrency) for u in users]
        counts[-1] = n - sum(counts[:-1])
        shares, start = [], 0
        for w, (u, c) in enumerate(zip(users, counts, strict=True)):
            shares.append({"worker": w, "concurrency": u, "indices": list(range(start, start + c))})
            start += c
    else:
        offsets = arrival_offsets_s(n, plan.rate, plan.arrival, plan.seed)
        shares = [{"worker": w, "concurrency": max(1, users[w]), "indices": list(range(w, n, workers)),
                   "offsets_s": offsets[w::workers]} for w in range(workers)]  # fmt: skip
    for share in shares:
        share["specs"] = [specs[i].__dict__ for i in share["indices"]]
        share["rate"], share["arrival"] = plan.rate, plan.arrival
    return [s for s in shares if s["indices"] and s["concurrency"] > 0]


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
    workers: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    late_ms: list[float] = field(default_factory=list)  # every worker's loop ticks, pooled

    def to_driver_ns(self, worker: int, perf_ns: int, mono_to_wall_ns: int) -> int:
        """A worker's perf_counter time on the driver's perf_counter clock."""
        wall = perf_ns + mono_to_wall_ns - self.clocks[worker].wall_offset_ns
        return wall - self.start_wall_ns + self.start_perf_ns

    def add(self, worker: int, row: dict[str, Any]) -> RequestRecord:
        """One record from ``worker`` (with its ``send_ns`` and ``mono_to_wall_ns``); its times are moved
        onto the driver's clock and its schedule onto the common start."""
        send = self.to_driver_ns(worker, row.pop("send_ns"), row.pop("mono_to_wall_ns"))
        rec = RequestRecord.from_json(row, send_ns=send)
        rec.worker, rec.concurrency = worker, self.concurrency
        shift_ms = (send - self.start_perf_ns) / 1e6 - rec.sent_ms  # its own level start, to the common one
        rec.scheduled_ms += shift_ms
        rec.sent_ms += shift_ms
        self.records.append(rec)
        self.finished.add(rec.request_id)
        return rec

    def worker_done(self, worker: int, stats: dict[str, Any]) -> None:
        m2w = stats["mono_to_wall_ns"]
        self.events += [(self.to_driver_ns(worker, t, m2w), d) for t, d in stats["events"]]
        self.late_ms += stats.get("late_ms") or []
        late = stats.get("start_late_ms") or 0.0
        if late > LATE_START_NOTE_MS:
            self.notes.append(f"client worker {worker} began {late:.0f} ms after the common start: its share's "
                              "first requests went out late (the mean in flight shows what it cost)")  # fmt: skip
        self.workers.append({"worker": worker, "requests": stats["requests"], **stats["loop_lag"],
                             "cpu_s": stats.get("cpu_s"), "start_late_ms": late,
                             **self.clocks[worker].to_json()})  # fmt: skip

    def worker_died(
        self, worker: int, share: dict[str, Any], why: str, id_prefix: str, phase: Phase
    ) -> list[RequestRecord]:
        """Failed records for the share's requests that never came back."""
        lost = []
        for i, spec in zip(share["indices"], share["specs"], strict=True):
            rid = f"{id_prefix}-{i:05d}"
            if rid in self.finished:
                continue
            rec = RequestRecord(request_id=rid, phase=phase, concurrency=self.concurrency,
                                expected_output_tokens=spec["output_len"] if spec["ignore_eos"] else None,
                                kind=spec["kind"], error=f"client worker {worker} died before this request finished: {why}",
                                worker=worker, send_ns=self.start_perf_ns)  # fmt: skip
            lost.append(rec)
            self.records.append(rec)
        self.notes.append(f"client worker {worker} died ({why}): {len(lost)} of its requests failed with it")
        self.workers.append({"worker": worker, "died": why, **self.clocks[worker].to_json()})
        return lost

    def delivery(self) -> Delivery:
        """The union of the workers' in-flight timelines, first to last dispatch."""
        d = Delivery()
        d._events = self.events
        sends = [r.send_ns for r in self.records if r.error is None or "died" not in (r.error or "")]
        d.dispatched = len(self.records)
        if sends:
            d.close(max(sends))
        return d


def start_times(margin_s: float = START_MARGIN_S) -> tuple[int, int]:
    """A common start (wall, and the same instant on this process's perf clock) ``margin_s`` from now."""
    wall, perf = time.time_ns(), time.perf_counter_ns()
    return wall + int(margin_s * 1e9), perf + int(margin_s * 1e9)
