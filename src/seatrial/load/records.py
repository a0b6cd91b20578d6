"""One record per request: what was asked, what came back, and when. A failed request is a record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Phase = Literal["warmup", "measure", "cooldown"]


@dataclass
class RequestRecord:
    """Timing of one streamed request.

    Times are milliseconds relative to ``send_ns`` (``time.perf_counter_ns`` when the request was sent):
    ``ttft_ms`` to the first chunk carrying output, ``last_token_ms`` to the last such chunk, ``e2e_ms``
    to the end of the stream. ``itl_ms[i]`` is the gap before content chunk i+1 divided by the number of
    tokens that chunk carried (from the server's continuous usage when it reports it,
    ``usage_per_chunk``, else 1).
    ``scheduled_ms`` is when the scheduler wanted to send it, relative to the level start, and
    ``sent_ms`` when it actually went out; their difference, less ``cap_wait_ms`` (waiting for a free
    slot under ``--max-concurrency``), is client lag.
    Chunk times are the kernel's receive times of the reads that completed them (``stamps`` is
    ``kernel``) or, where the kernel gives none, user-space times taken as each read returned
    (``user``). ``read_lag_ms_max`` is the longest the client took to handle a read after it
    arrived; ``merged_events`` counts events that arrived merged into one read with a later one
    (the client fell a whole gap behind that stream), which then share the later one's time.
    ``ttfa_ms`` is the time to the first answer token: the first token not marked as reasoning (equal to
    ``ttft_ms`` where the stream carries no reasoning; None where it carried reasoning only).
    ``reasoning_tokens`` counts the tokens of chunks that carried reasoning text only, ``answer_tokens``
    the rest of ``output_tokens``.
    ``resends`` counts the times the request was sent again because it had gone out on a pooled
    keep-alive connection that the server had closed and the server provably never read it (a reset
    before any response byte, see :mod:`seatrial.load.reuse`); ``stale_connections`` the pooled
    connections found closed by the server before use (nothing sent on them).
    ``trace_line`` is the 0-based line of the trace a replayed request came from; ``session`` and ``turn``
    (0-based) place a request in its conversation.
    """

    request_id: str
    phase: Phase
    concurrency: int
    expected_output_tokens: int | None = None
    expected_prompt_tokens: int | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    ttft_ms: float | None = None
    ttfa_ms: float | None = None
    last_token_ms: float | None = None
    e2e_ms: float | None = None
    itl_ms: list[float] = field(default_factory=list)
    chunks: int = 0
    reasoning_tokens: int | None = None
    answer_tokens: int | None = None
    scheduled_ms: float = 0.0
    sent_ms: float = 0.0
    cap_wait_ms: float = 0.0  # open loop: time waiting for a free slot under --max-concurrency
    status: int | None = None
    error: str | None = None
    kind: str = "default"
    trace_line: int | None = None
    session: int | None = None
    turn: int | None = None
    finish_reason: str | None = None
    response_id: str | None = None  # the server's id for the request (vLLM: cmpl-<X-Request-Id>)
    stamps: str | None = None  # "kernel" | "user"
    read_lag_ms_max: float | None = None
    merged_events: int = 0
    resends: int = 0  # sends again after a pooled connection the server closed had reset the unread request
    stale_connections: int = 0  # pooled connections the server had closed, found before use and not used
    usage_per_chunk: bool = False  # the server reported usage in content chunks (exact tokens per chunk)
    worker: int | None = None  # the client worker (process or Ray actor) that sent it; None: the only one
    level: int | None = None  # the index of the run's level it belongs to; None: sent outside a level
    # the engine's own timing from its span (--otlp-listen): queue_ms, prefill_ms, decode_ms, ttft_ms, e2e_ms
    server_timing: dict[str, float | None] | None = None
    send_ns: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def tpot_ms(self) -> float | None:
        """(last token − first token) / (output_tokens − 1); undefined for fewer than 2 tokens."""
        if not self.ok or self.ttft_ms is None or self.last_token_ms is None:
            return None
        if not self.output_tokens or self.output_tokens < 2:
            return None
        return (self.last_token_ms - self.ttft_ms) / (self.output_tokens - 1)

    @property
    def lag_ms(self) -> float:
        return self.sent_ms - self.scheduled_ms - self.cap_wait_ms

    def to_json(self) -> dict[str, Any]:
        # shallow: dataclasses.asdict deep-copies every ITL list, ~100 us a record on the load loop
        data = dict(self.__dict__)
        data.pop("send_ns")
        data["tpot_ms"] = self.tpot_ms
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any], send_ns: int = 0) -> RequestRecord:
        """A record back from :meth:`to_json` (a row of requests.jsonl)."""
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "send_ns"}
        return cls(**fields, send_ns=send_ns)
