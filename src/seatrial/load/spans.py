"""The engine's spans joined to the client's records (``--otlp-listen``).

Each request goes out with ``X-Request-Id: <record id>`` and a W3C ``traceparent`` whose trace id is made
from the run's salt and the record id. A span is joined to its request by ``gen_ai.request.id`` (vLLM:
``cmpl-<id>-0`` for completions, ``chatcmpl-<id>`` for chat; the bare id for engines that keep it), else by
its trace id. After a level's last request the book waits until every successful request has its span, at
most ``flush_s`` (the engine exports in batches: vLLM's default is every 5 s); a level whose wait ended with
no span at all from the server, in this level or any earlier one, is UNAVAILABLE with the reason, and later
levels then do not wait. Spans that match no request of the run are counted (``unmatched``), as are
requests without a span; nothing is dropped silently.

An engine that carries the ``traceparent`` over (vLLM does) gives every span of this run one of the run's
trace ids. Once one span has come back so, a span with any other trace id is another run's (``other_runs``:
an exporter still retrying an earlier run's batch when this run's receiver came up), even where its request
id is one of this run's (every run names its requests L0-00000, ...); it is never joined. Until then a span
whose request id is ours but whose trace id is not waits, and joins by its request id only when the level's
wait ends with no span of ours by trace id (an engine that makes its own trace ids).
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from dataclasses import dataclass, field

from seatrial.load.records import RequestRecord
from seatrial.runs.summaries.bench import ServerTiming, SpanCounts
from seatrial.server.otlp import HOW_TO_TRACE, ServerSpan, SpanReceiver
from seatrial.stats import distribution

#: a request's timing by the engine (``RequestRecord.server_timing``)
Timing = dict[str, float | None]
POLL_S = 0.05
#: the engine's TTFT or E2E above the client's by more than this is counted (a wrong join or clock)
EXCEEDS_MS = 1.0
UNMATCHED_SHOWN = 5


def trace_id(salt: str, request_id: str) -> str:
    """The trace id (32 hex) the request with ``request_id`` carries in this run."""
    return hashlib.blake2b(f"{salt}/{request_id}".encode(), digest_size=16).hexdigest()


def traceparent(salt: str, request_id: str) -> str:
    tid = trace_id(salt, request_id)
    return f"00-{tid}-{tid[:16]}-01"


def span_ids(request_id: str) -> tuple[str, ...]:
    """The ``gen_ai.request.id`` values an engine may give the request sent as ``request_id``."""
    return (f"cmpl-{request_id}-0", f"chatcmpl-{request_id}", request_id, f"cmpl-{request_id}")


@dataclass
class _Sent:
    record: RequestRecord
    span: ServerSpan | None = None
    by_trace: bool = False
    joined: bool = False  # its level was summarized


@dataclass
class SpanBook:
    """The run's requests and the spans that came for them (see the module docstring)."""

    receiver: SpanReceiver
    flush_s: float
    salt: str = field(default_factory=lambda: secrets.token_hex(8))

    def __post_init__(self) -> None:
        self._sent: dict[str, _Sent] = {}
        self._keys: dict[str, str] = {}  # span id or "trace:<hex>" -> record id
        self._loose: list[ServerSpan] = []  # spans whose request was not (yet) known
        self._late = self._duplicates = 0
        self._other_runs: list[ServerSpan] = []
        self._propagates = False  # a span came back with one of this run's trace ids
        self._silent = False  # a level's whole wait brought no span: the server sends none

    def sent(self, rec: RequestRecord) -> None:
        """Register a finished request (warm-up or measured) so that its span can find it."""
        self._sent[rec.request_id] = _Sent(rec)
        for key in span_ids(rec.request_id):
            self._keys.setdefault(key, rec.request_id)
        self._keys[f"trace:{trace_id(self.salt, rec.request_id)}"] = rec.request_id

    def _ours(self, span: ServerSpan) -> bool:
        """The span carries one of this run's trace ids."""
        return f"trace:{span.trace_id}" in self._keys

    def _collect(self, by_id_alone: bool = False) -> None:
        """Take the receiver's spans and join each to its request (``by_id_alone``: a span whose trace id is
        not ours joins by its request id too, as long as no span came back with one of ours)."""
        spans, self._loose = self._loose + self.receiver.take(), []
        self._propagates = self._propagates or any(self._ours(s) for s in spans)
        for span in spans:
            ours = self._ours(span)
            if self._propagates and not ours:
                self._other_runs.append(span)
                continue
            rid = self._keys.get(span.request_id or "")
            by_trace = rid is None
            rid = rid or self._keys.get(f"trace:{span.trace_id}")
            entry = self._sent.get(rid) if rid else None
            if entry is None or not (ours or by_id_alone):
                self._loose.append(span)
            elif entry.span is not None:
                self._duplicates += 1  # n > 1 gives several spans with one id: the first is kept
            else:
                entry.span, entry.by_trace = span, by_trace
                self._late += entry.joined

    def _missing(self, records: list[RequestRecord]) -> int:
        return sum(1 for r in records if r.ok and self._sent.get(r.request_id, _Sent(r)).span is None)

    async def settle(self, records: list[RequestRecord]) -> float:
        """Wait until every ok record of ``records`` has its span, at most ``flush_s``; the seconds waited."""
        start = time.monotonic()
        while True:
            self._collect()
            waited = time.monotonic() - start
            if not self._missing(records) or self._silent or waited >= self.flush_s:
                self._collect(by_id_alone=True)
                return waited
            await asyncio.sleep(POLL_S)

    def join(self, records: list[RequestRecord], waited_s: float) -> ServerTiming:
        """Put each record's span on it (``server_timing``) and summarize the level."""
        joined: list[tuple[RequestRecord, Timing]] = []
        by_trace = 0
        for rec in records:
            entry = self._sent.setdefault(rec.request_id, _Sent(rec))
            entry.joined = True
            if entry.span is not None:
                rec.server_timing = dict(entry.span.timing)
                joined.append((rec, entry.span.timing))
                by_trace += entry.by_trace
        ever = any(e.span is not None for e in self._sent.values())
        base = {"requests": len(records), "joined": len(joined), "joined_by_trace_id": by_trace,
                "without_span": len(records) - len(joined), "flush_wait_s": round(waited_s, 3),
                "flush_bound_s": self.flush_s}  # fmt: skip
        if not ever:
            self._silent = True
            why = (f"no span arrived at {self.receiver.endpoint} within {self.flush_s:g} s of the level's last "
                   f"request ({self.receiver.counts.other_spans} spans of other names): the server exports none "
                   f"there; {HOW_TO_TRACE.format(endpoint=self.receiver.endpoint)}")  # fmt: skip
            return ServerTiming(status="UNAVAILABLE", reason=why, **base)
        return ServerTiming(status="MEASURED", **base, **phases(joined))

    def counts(self) -> SpanCounts:
        """The run's spans, once its last level was summarized."""
        self._collect()
        c = self.receiver.counts
        entries = list(self._sent.values())
        measured = sum(1 for e in entries if e.span is not None and e.record.phase == "measure" and e.joined)
        warm = sum(1 for e in entries if e.span is not None and e.record.phase == "warmup")
        outside = sum(1 for e in entries if e.span is not None and e.record.phase == "measure" and not e.joined)
        ids, others = _names(self._loose), _names(self._other_runs)
        return SpanCounts(
            endpoint=self.receiver.endpoint, flush_bound_s=self.flush_s, posts=c.posts, spans=c.spans,
            other_spans=c.other_spans, refused=c.refused, last_refusal=c.last_refusal,
            joined=measured - self._late, warmup=warm, outside_levels=outside, late=self._late,
            duplicates=self._duplicates, other_runs=len(self._other_runs), other_runs_ids=others,
            unmatched=len(self._loose), unmatched_ids=ids,
        )  # fmt: skip


def _names(spans: list[ServerSpan]) -> list[str]:
    """The first few spans' request ids (a trace id where the span has none), for the summary."""
    return [s.request_id or f"trace {s.trace_id}" for s in spans[:UNMATCHED_SHOWN]]


def answered(records: list[RequestRecord]) -> ServerTiming | None:
    """The level's server timing where the engine stated it in each answer (llama.cpp's ``timings``,
    seatrial.server.timings) rather than in spans; None where no record carries one."""
    joined = [(r, r.server_timing) for r in records if r.ok and r.server_timing is not None]
    if not joined:
        return None
    ok = sum(r.ok for r in records)
    return ServerTiming(status="MEASURED", source="answer", requests=len(records), joined=len(joined),
                        without_span=ok - len(joined), **phases(joined))  # fmt: skip


def phases(joined: list[tuple[RequestRecord, Timing]]) -> dict[str, object]:
    """The engine's phase distributions over the joined requests, the time outside the engine (client TTFT −
    engine TTFT) and its share of the client's TTFT, and how many exceed the client's by > 1 ms."""
    out: dict[str, object] = {}
    for key in ("queue_ms", "prefill_ms", "decode_ms", "ttft_ms", "e2e_ms", "tpot_ms"):
        out[key] = distribution([v for _, t in joined if (v := t.get(key)) is not None])
    outside, share, exceeds = [], [], 0
    for rec, timing in joined:
        c_ttft, s_ttft, s_e2e = rec.ttft_ms, timing.get("ttft_ms"), timing.get("e2e_ms")
        if c_ttft is not None and s_ttft is not None:
            outside.append(c_ttft - s_ttft)
            if c_ttft > 0:
                share.append((c_ttft - s_ttft) / c_ttft)
        over_ttft = c_ttft is not None and s_ttft is not None and s_ttft > c_ttft + EXCEEDS_MS
        over_e2e = rec.e2e_ms is not None and s_e2e is not None and s_e2e > rec.e2e_ms + EXCEEDS_MS
        exceeds += over_ttft or over_e2e
    return out | {"network_client_ms": distribution(outside), "network_client_share": distribution(share),
                  "server_exceeds_client": exceeds}  # fmt: skip
