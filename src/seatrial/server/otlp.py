"""The OTLP span receiver: an engine's own per-request timing, as it exports it.

vLLM (0.32) exports one ``llm_request`` span per finished request when started with
``--otlp-traces-endpoint http://HOST:PORT/v1/traces`` and ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf``
(never together with ``--disable-log-stats``: vLLM then fails every request). :class:`SpanReceiver`
listens there (OTLP/HTTP, protobuf, optionally gzip or deflate) on its own thread and event loop, so that
decoding never delays the load client's loop, and keeps each ``llm_request`` span's request id, trace id
and latencies (converted to ms). Spans of other names (vLLM's start-up spans) are counted, not kept.
Every POST is answered 200 with an empty ``ExportTraceServiceResponse``, as the OTLP specification asks.

gRPC is not served: ``grpcio`` is a large dependency for what the HTTP exporter already carries.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from seatrial.errors import ConfigError

TRACES_PATH = "/v1/traces"
LLM_REQUEST = "llm_request"
REQUEST_ID = "gen_ai.request.id"
#: server_timing's fields and the span attribute (float seconds) each is read from
LATENCIES = {
    "queue_ms": "gen_ai.latency.time_in_queue",
    "prefill_ms": "gen_ai.latency.time_in_model_prefill",
    "decode_ms": "gen_ai.latency.time_in_model_decode",
    "ttft_ms": "gen_ai.latency.time_to_first_token",
    "e2e_ms": "gen_ai.latency.e2e",
}
PROTOBUF = "application/x-protobuf"
#: how to tell an engine to export its spans here (vLLM's flags and environment)
HOW_TO_TRACE = (
    "vLLM: start it with --otlp-traces-endpoint {endpoint} and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf "
    "(OTEL_BSP_SCHEDULE_DELAY=200 sends each span 0.2 s after its request instead of 5 s), never with "
    "--disable-log-stats"
)


@dataclass(frozen=True)
class ServerSpan:
    """One ``llm_request`` span: the engine's id for the request, the trace id (32 hex), its latencies in ms
    (None where the span lacks the attribute), and when it arrived (``perf_counter_ns``)."""

    request_id: str | None
    trace_id: str
    timing: dict[str, float | None]
    received_ns: int


def parse_listen(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:4318`` for IPv6) -> (host, port); ValueError naming what is wrong."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{value!r}: expected HOST:PORT, e.g. 127.0.0.1:4318")
    return host, int(port)


def _attr(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def decode_spans(body: bytes, received_ns: int) -> tuple[list[ServerSpan], int]:
    """The ``llm_request`` spans of one ExportTraceServiceRequest, and how many other spans it held."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    kept: list[ServerSpan] = []
    other = 0
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                if span.name != LLM_REQUEST:
                    other += 1
                    continue
                attrs = {kv.key: _attr(kv.value) for kv in span.attributes}
                timing = {k: _ms(attrs.get(a)) for k, a in LATENCIES.items()}
                rid = attrs.get(REQUEST_ID)
                kept.append(ServerSpan(None if rid is None else str(rid), span.trace_id.hex(), timing, received_ns))
    return kept, other


def _ms(seconds: Any) -> float | None:
    return float(seconds) * 1000.0 if isinstance(seconds, int | float) else None


@dataclass
class ReceiverCounts:
    """What the receiver got: POSTs, ``llm_request`` spans, other spans, POSTs it refused (and the last why)."""

    posts: int = 0
    spans: int = 0
    other_spans: int = 0
    refused: int = 0
    last_refusal: str | None = None


@dataclass
class SpanReceiver:
    """OTLP/HTTP receiver on ``host:port`` (see the module docstring); ``take()`` hands over the spans that
    arrived since the last call. Use as a context manager, or ``start()`` / ``stop()``."""

    host: str
    port: int
    counts: ReceiverCounts = field(default_factory=ReceiverCounts)

    def __post_init__(self) -> None:
        self._spans: list[ServerSpan] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="seatrial-otlp", daemon=True)

    @property
    def endpoint(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{TRACES_PATH}"

    def start(self) -> SpanReceiver:
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise ConfigError(f"--otlp-listen {self.host}:{self.port}: cannot listen there: {self._error}")
        return self

    def stop(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)

    def __enter__(self) -> SpanReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def take(self) -> list[ServerSpan]:
        with self._lock:
            out, self._spans = self._spans, []
        return out

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application(client_max_size=64 << 20)
        app.router.add_post(TRACES_PATH, self._handle)
        runner = web.AppRunner(app, access_log=None)
        try:
            self._loop.run_until_complete(runner.setup())
            self._loop.run_until_complete(web.TCPSite(runner, self.host, self.port).start())
        except OSError as exc:
            self._error = exc
            self._ready.set()
            self._loop.run_until_complete(runner.cleanup())
            return
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())

    async def _handle(self, request: web.Request) -> web.Response:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        received = time.perf_counter_ns()
        self.counts.posts += 1
        if request.content_type != PROTOBUF:
            return self._refuse(415, f"Content-Type {request.content_type!r}: only {PROTOBUF} is served")
        try:
            spans, other = decode_spans(await request.read(), received)  # aiohttp inflates gzip / deflate
        except Exception as exc:  # a body that is not an ExportTraceServiceRequest: refused, and counted
            return self._refuse(400, f"undecodable body: {type(exc).__name__}: {exc}")
        with self._lock:
            self._spans.extend(spans)
            self.counts.spans += len(spans)
            self.counts.other_spans += other
        reply = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=reply, content_type=PROTOBUF)

    def _refuse(self, status: int, why: str) -> web.Response:
        self.counts.refused += 1
        self.counts.last_refusal = why
        return web.Response(status=status, text=why)


def encode_spans(spans: list[dict[str, Any]], names: tuple[str, ...] = ()) -> bytes:
    """An ExportTraceServiceRequest as vLLM's exporter sends it: one ``llm_request`` span per dict
    (``request_id``, ``trace_id`` as 32 hex, and ``LATENCIES``' fields in ms, sent as float seconds), and one
    span of each other name in ``names`` (a start-up span). For the synthetic server and tests."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    scope.scope.name = "vllm.tracing.otel"
    for s in spans:
        span = scope.spans.add(name=LLM_REQUEST, kind=2, trace_id=bytes.fromhex(s["trace_id"]))
        span.span_id = bytes.fromhex(s["trace_id"][:16])
        if s.get("request_id") is not None:
            span.attributes.add(key=REQUEST_ID).value.string_value = s["request_id"]
        for key, attr in LATENCIES.items():
            if s.get(key) is not None:
                span.attributes.add(key=attr).value.double_value = s[key] / 1000.0
    for name in names:
        scope.spans.add(name=name, kind=1, trace_id=bytes(16), span_id=bytes(8))
    return request.SerializeToString()
