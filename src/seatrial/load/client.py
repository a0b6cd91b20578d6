"""Streaming OpenAI-compatible client. One call, one record; every failure becomes the record's error."""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from seatrial.load.records import RequestRecord
from seatrial.load.reuse import MAX_ATTEMPTS, GuardedConnector, begin_attempt, end_attempt
from seatrial.load.spans import traceparent
from seatrial.load.sse import Chunk, MalformedStream, is_done, parse_data_line
from seatrial.load.stamps import (
    StampedSocket,
    read_stamped_socket,
    socket_of,
    stamped_socket,
    user_stamped_socket,
)
from seatrial.load.workloads import RequestSpec
from seatrial.load.workloads.spec import is_messages
from seatrial.runs.redact import redact_text, remember_authorization
from seatrial.server.timings import llamacpp_timing

NS_PER_MS = 1_000_000
KEEPALIVE_S = 3.0
NO_TOKEN = "stream carried no output token"


def new_http(
    timeout_s: float, stall_timeout_s: float, kernel_stamps: bool = True, packet_stamps: bool = True
) -> aiohttp.ClientSession:
    """A session whose sockets stamp reads in the kernel (``kernel_stamps``) and, where the kernel permits a
    packet capture, each received segment (``packet_stamps``: load.capture), else in user space."""
    timeout = aiohttp.ClientTimeout(total=timeout_s, sock_read=stall_timeout_s, sock_connect=10)
    # Idle connections are dropped before the server drops them (uvicorn: 5 s), and a pooled one the
    # server closed anyway (llama-server closes each after its stream) is never used (load.reuse).
    connector = GuardedConnector(
        limit=0,
        ttl_dns_cache=300,
        keepalive_timeout=KEEPALIVE_S,
        socket_factory=_factory(kernel_stamps, packet_stamps),
    )
    return aiohttp.ClientSession(timeout=timeout, connector=connector, raise_for_status=False)


def _factory(kernel: bool, packets: bool) -> Callable[[tuple[Any, ...]], socket.socket]:
    if not kernel:
        return user_stamped_socket
    return stamped_socket if packets else read_stamped_socket


@dataclass
class Endpoint:
    """Where requests go; ``headers`` may hold an Authorization header and is never written anywhere."""

    base_url: str
    model: str
    kind: str  # "completions" | "chat"
    headers: dict[str, str]
    continuous_usage: bool = False
    trace_salt: str | None = None  # set: each request carries a traceparent (load.spans) for the span join

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/{'chat/completions' if self.kind == 'chat' else 'completions'}"

    def payload(self, spec: RequestSpec) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "max_tokens": spec.output_len, "stream": True}
        prompt = spec.prompt
        if self.kind == "chat":
            body["messages"] = prompt if is_messages(prompt) else [{"role": "user", "content": prompt}]
        else:  # text, or token ids (vLLM takes them as they are: no re-tokenization, no BOS added)
            body["prompt"] = prompt[-1]["content"] if is_messages(prompt) else prompt
        body["stream_options"] = {"include_usage": True, "continuous_usage_stats": self.continuous_usage}
        if spec.ignore_eos:
            body["ignore_eos"] = True
        return body


class _Timing:
    """Accumulates chunk arrival times into TTFT, TTFA and per-token ITL; with ``answer`` (a list), also
    collects the answer's text there (a conversation's next turn needs it; it is never written). ``asked``:
    the ``max_tokens`` sent; a usage above it is the server's nonsense (the stream fails)."""

    def __init__(
        self, rec: RequestRecord, t0: int, answer: list[str] | None = None, asked: int | None = None
    ) -> None:
        self.rec, self.t0, self.answer, self.asked = rec, t0, answer, asked
        self.last_ns: int | None = None
        self.done_ns: int | None = None
        self.tokens_seen = 0
        self.reasoning_tokens = 0
        self.usage_tokens: int | None = None
        self.finish_only_ns: int | None = None  # an empty chunk that only closed the stream
        self.finish_only_reasoning = False  # ... marked as reasoning
        self.finish_only_chat = False  # ... of a chat stream

    def on_chunk(self, chunk: Chunk, now: int) -> int:
        """Account one event arrived at ``now``; returns the output tokens it carried."""
        if chunk.prompt_tokens is not None:
            self.rec.prompt_tokens = chunk.prompt_tokens
        if chunk.finish_reason:
            self.rec.finish_reason = chunk.finish_reason
        if self.rec.response_id is None and chunk.response_id:
            self.rec.response_id = chunk.response_id
        if chunk.timings is not None:
            self.rec.server_timing = llamacpp_timing(chunk.timings)
        n = self._tokens_in(chunk)
        if n <= 0:
            if (
                chunk.has_choice
                and not chunk.text
                and chunk.finish_reason
                and (chunk.completion_tokens is None or not self.rec.usage_per_chunk)
            ):
                self.finish_only_ns, self.finish_only_reasoning = now, chunk.only_reasoning
                self.finish_only_chat = chunk.is_chat
            return 0
        if self.answer is not None and chunk.answer:
            self.answer.append(chunk.answer)
        return self._count(n, now, chunk.only_reasoning)

    def _count(self, n: int, now: int, reasoning: bool = False) -> int:
        if reasoning:
            self.reasoning_tokens += n
        elif self.rec.ttfa_ms is None:
            self.rec.ttfa_ms = (now - self.t0) / NS_PER_MS
        if self.last_ns is None:
            self.rec.ttft_ms = (now - self.t0) / NS_PER_MS
        else:
            gap_ms = (now - self.last_ns) / NS_PER_MS
            self.rec.itl_ms.extend([gap_ms / n] * n if n > 1 else [gap_ms])
        self.last_ns = now
        self.rec.chunks += 1
        self.tokens_seen += n
        return n

    def note_reads(self, reads: list[int], now: int, merged: int) -> None:
        """Self-check of the stamps: how late the client handled the newest read, and merged events."""
        if not reads:
            return
        lag_ms = (now - reads[-1]) / NS_PER_MS
        rec = self.rec
        rec.read_lag_ms_max = lag_ms if rec.read_lag_ms_max is None else max(rec.read_lag_ms_max, lag_ms)
        rec.merged_events += merged

    def _tokens_in(self, chunk: Chunk) -> int:
        if chunk.completion_tokens is not None:
            if self.asked is not None and chunk.completion_tokens > self.asked:
                raise MalformedStream(
                    f"usage says {chunk.completion_tokens} completion tokens, more than the {self.asked} asked"
                )
            # The first usage of a stream whose token chunks had none is the total, not this chunk's count:
            # llama-server puts its usage (and timings) beside the finish_reason of the last chunk.
            total = self.usage_tokens is None and self.tokens_seen > 0
            prev = self.usage_tokens or 0
            self.usage_tokens = chunk.completion_tokens
            # A usage-only chunk (no choices) repeats the total: it carries no new token.
            if not chunk.has_choice:
                return 0
            if not total:
                self.rec.usage_per_chunk = True
                return chunk.completion_tokens - prev
        # No usage per chunk: a chunk carries one token when it carries text, or when it is a completions
        # chunk whose token decoded to nothing yet (a partial UTF-8 byte: vLLM sends one chunk per token).
        # An empty chunk that carries only a finish_reason (a trailing finish chunk) carries none, unless
        # the server's total says it did (see finish); a chat chunk without content (the role) carries none,
        # unless it is marked as reasoning.
        if not chunk.has_choice:
            return 0
        if chunk.text:
            return 1
        if chunk.only_reasoning and not chunk.finish_reason:
            return 1  # vLLM sends {"reasoning": ""} for each reasoning token that decoded to no text yet
        return 1 if not chunk.is_chat and not chunk.finish_reason else 0

    def finish(self, end_ns: int) -> None:
        # An empty last chunk that the server's total counts as one token was that token. Of a completions
        # stream (vLLM sends every token a chunk, text or not) with no token chunk before it, the server (a
        # starved API server) merged the whole output into it. A chat stream's tokens without text have
        # no chunk at all: when they came is unknown, so they are not timed.
        missing = (self.usage_tokens or 0) - self.tokens_seen
        merged = missing > 1 and self.tokens_seen == 0 and not self.finish_only_chat
        if self.finish_only_ns is not None and (missing == 1 or merged):
            self._count(missing, self.finish_only_ns, self.finish_only_reasoning)
        rec = self.rec
        rec.e2e_ms = (end_ns - self.t0) / NS_PER_MS
        if self.last_ns is not None:
            rec.last_token_ms = (self.last_ns - self.t0) / NS_PER_MS
        rec.output_tokens = self.usage_tokens if self.usage_tokens is not None else self.tokens_seen
        rec.reasoning_tokens = min(self.reasoning_tokens, rec.output_tokens)
        rec.answer_tokens = rec.output_tokens - rec.reasoning_tokens


async def send(
    session: aiohttp.ClientSession,
    ep: Endpoint,
    spec: RequestSpec,
    rec: RequestRecord,
    answer: list[str] | None = None,
) -> RequestRecord:
    """Send ``spec``, stream the answer into ``rec`` (and its text into ``answer`` when given). Never raises
    except for cancellation. A request that went out on a pooled connection the server had closed and
    that the server provably never read is sent again (``rec.resends``; see :mod:`seatrial.load.reuse`);
    its times still count from the first send."""
    headers = {**ep.headers, "X-Request-Id": rec.request_id}
    if ep.trace_salt:
        headers["traceparent"] = traceparent(ep.trace_salt, rec.request_id)
    rec.send_ns = t0 = time.perf_counter_ns()
    body = ep.payload(spec)
    for n in range(MAX_ATTEMPTS):
        attempt, token = begin_attempt(fresh=n > 0)
        try:
            rec.error = await _send_once(session, ep.url, body, headers, rec, _Timing(rec, t0, answer, spec.output_len))
        finally:
            end_attempt(token)
            await attempt.settle()
        rec.stale_connections += attempt.stale_dropped
        last = n == MAX_ATTEMPTS - 1
        if rec.error is None or rec.status is not None or not attempt.never_read() or last:
            break
        rec.resends += 1
        rec.error = None
        if isinstance(session.connector, GuardedConnector):  # the server closed it unread: learn from it
            session.connector.closed_soon(attempt.sock)
    if rec.error:
        rec.error = _server_words(rec.error, ep)
    if rec.error and rec.e2e_ms is None:
        rec.e2e_ms = (time.perf_counter_ns() - t0) / NS_PER_MS
    return rec


async def _send_once(
    session: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str],
    rec: RequestRecord, timing: _Timing,
) -> str | None:  # fmt: skip
    """One send of the request; the error, if any."""
    try:
        async with session.post(url, json=body, headers=headers) as resp:
            rec.status = resp.status
            if resp.status != 200:
                text = (await resp.read())[:300].decode(errors="replace")
                return f"HTTP {resp.status}: {text}"
            sock = socket_of(_transport(resp))
            rec.stamps = _stamp_source(sock)
            done = await _consume(resp, timing, sock)
            timing.finish(timing.done_ns or time.perf_counter_ns())
            if not done:
                return "stream ended before [DONE]"
            if timing.last_ns is None:
                return NO_TOKEN
            return None
    except MalformedStream as exc:
        return str(exc)
    except asyncio.TimeoutError:
        return "timeout: no data within the stall or total timeout"
    except aiohttp.ClientError as exc:
        return f"{type(exc).__name__}: {exc}"
    except (OSError, ValueError) as exc:  # ValueError: aiohttp's line-too-long
        return f"{type(exc).__name__}: {exc}"


def _server_words(error: str, ep: Endpoint) -> str:
    """A failure's text, redacted: a 401 body or a stream's error event may quote the credentials sent."""
    if "Authorization" in ep.headers:  # known in this process too (a client worker's)
        remember_authorization(ep.headers["Authorization"])
    return redact_text(error)


async def _consume(resp: aiohttp.ClientResponse, timing: _Timing, sock: StampedSocket | None) -> bool:
    """Read SSE events as the bytes arrive; True when the stream completed with ``[DONE]``.

    Each event is timed by the arrival of the read that completed it (``stamps``): events that
    came in one data chunk are matched to that chunk's reads from the newest back. Events beyond
    the reads arrived merged in one read (the client was a whole gap behind) and share its time.
    """
    if sock is not None and sock.per_segment:
        return await _consume_exact(resp, timing, sock)
    buf = b""
    # The newest read so far, if body bytes came with it (with the headers, or while the client was
    # late): a read that brought only the headers times no event.
    reads = sock.take()[-1:] if sock is not None else []
    if not resp.content.total_bytes:
        reads = []
    async for data in resp.content.iter_any():
        now = time.perf_counter_ns()
        if sock is not None:
            reads += sock.take()
        buf += data
        *lines, buf = buf.split(b"\n")
        events = [line for line in lines if len(line) >= 6]  # not the blank line after each event
        if _time_events(events, reads, now, timing):
            return True
        reads = []
    return is_done(buf)


async def _consume_exact(resp: aiohttp.ClientResponse, timing: _Timing, sock: StampedSocket) -> bool:
    """``_consume`` with per-segment stamps (load.capture): each ``data:`` event is timed by the arrival
    of the TCP segment that brought its last byte, however many events one read held."""
    buf = b""
    pending: deque[int] = deque()
    missed = sock.missed
    try:
        async for data in resp.content.iter_any():
            now = time.perf_counter_ns()
            pending.extend(sock.take_events())
            buf += data
            *lines, buf = buf.split(b"\n")
            events = [line for line in lines if len(line) >= 6]
            if _time_exact(events, pending, now, timing):
                return True
        return is_done(buf)
    finally:
        if sock.missed > missed:  # some events were timed per read: judged as such (load.validity)
            timing.rec.stamps = "kernel"


def _time_exact(events: list[bytes], pending: deque[int], now: int, timing: _Timing) -> bool:
    """Time each event by its own stamp (``now`` where none is left); events the server sent in one
    segment share its stamp and count as merged. True at ``[DONE]``."""
    merged, newest, last_token_at = 0, None, None
    for line in events:
        at = pending.popleft() if pending and line.startswith(b"data:") else now
        newest = at if newest is None else max(newest, at)
        if line.startswith((b"data: [", b"data:[")) and is_done(line):
            timing.done_ns = at
            timing.note_reads([newest], now, merged)
            return True
        chunk = parse_data_line(line)
        if chunk is not None and timing.on_chunk(chunk, at):
            merged += at == last_token_at
            last_token_at = at
    timing.note_reads([newest] if newest is not None else [], now, merged)
    return False


def _time_events(events: list[bytes], reads: list[int], now: int, timing: _Timing) -> bool:
    """Time the complete events of one data chunk by its reads, matched from the newest back; events
    beyond the reads arrived merged in the oldest and share its time (no reads: user-space ``now``).
    True at ``[DONE]``."""
    in_first_read = 0  # token events timed by reads[0]: all but the last of them arrived merged
    done = False
    for k, line in enumerate(events):
        i = len(reads) - len(events) + k
        at = reads[max(i, 0)] if reads else now
        if line.startswith((b"data: [", b"data:[")) and is_done(line):
            timing.done_ns, done = at, True
            break
        chunk = parse_data_line(line)
        if chunk is not None and timing.on_chunk(chunk, at) and i <= 0 and reads:
            in_first_read += 1
    timing.note_reads(reads, now, max(in_first_read - 1, 0))
    return done


def _stamp_source(sock: StampedSocket | None) -> str:
    if sock is None or not sock.kernel:
        return "user"
    return "packet" if sock.per_segment else "kernel"


def _transport(resp: aiohttp.ClientResponse) -> Any:
    """The response's transport, also when aiohttp has already released the connection to its pool
    (the whole body had arrived before the client looked: its reads are still this response's)."""
    if resp.connection is not None:
        return resp.connection.transport
    return getattr(getattr(resp, "_protocol", None), "transport", None)
