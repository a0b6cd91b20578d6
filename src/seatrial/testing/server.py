"""A synthetic OpenAI-compatible token server: exact timing, chosen faults, real Prometheus metrics.

It exists to test the load client where a real engine cannot be made to misbehave on purpose, and to
measure the client's own timing error: every chunk it sends is stamped with ``perf_counter_ns`` (a
system-wide monotonic clock on Linux), kept per ``X-Request-Id`` and served at ``GET /stamps``.

Tokenizer: words ``w<id>`` separated by spaces, so ``/tokenize`` and ``/detokenize`` round-trip exactly.
Usage as vLLM sends it: in every chunk with ``stream_options.continuous_usage_stats``, in a last chunk
without choices with ``include_usage``. ``tokens_per_chunk`` > 1 puts several tokens in each chunk,
as speculative decoding does.
Faults (``fault`` for every ``fault_every``-th request): ``http500``, ``http429``, ``die`` (connection
dropped mid-stream), ``stall`` (stops sending, holds the connection), ``malformed`` (a non-JSON data
line), ``no_done`` (stream closes without ``[DONE]``), ``short`` (stops early with finish_reason stop),
``textless`` (every token's text is empty, as vLLM streams a model that emits only special tokens:
a chat stream then carries no content at all, only its finish chunk and usage), ``echo_auth`` (HTTP 401
whose body quotes the request's Authorization header and its bare credential, as servers that say
"Incorrect API key provided: sk-..." do), ``echo_auth_stream`` (an error event mid-stream that quotes them).
Spans: with ``otlp_endpoint`` it exports one ``llm_request`` span per finished request every
``span_interval_s``, as vLLM does (ids ``cmpl-<X-Request-Id>-0`` / ``chatcmpl-<X-Request-Id>``, the
``traceparent``'s trace id, its own queue/prefill/decode/TTFT/E2E), except every ``spanless_every``-th
request; ``stray_spans`` more spans carry ids of no request.
Prompts may be text, messages or token ids (a list of ints, as vLLM's completions take them).
``reasoning_tokens`` R: a chat stream's first R tokens come as reasoning deltas (``delta.reasoning`` as
vLLM 0.32 sends them, or ``reasoning_field``), the rest as content, as a reasoning parser splits them.
``GET /arrivals`` gives each request's arrival (``perf_counter_ns`` when its handler began, per
``X-Request-Id``): a send time seen by the server, the same for any client.
With ``block_size`` set, a ``vllm:cache_config_info`` gauge names it, as vLLM's does.
With ``batch`` (a :class:`~seatrial.testing.batching.BatchLaw`: ``--batch-slots``, ``--step-ms``,
``--step-growth``, ``--prefill-steps``) it serves continuous batching instead of the fixed TTFT and ITL:
one timer loop steps every running request (server.batching); faults and spans are not served then.
"""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import threading
import time
import urllib.request
import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from seatrial.server.process import free_port
from seatrial.testing.batching import BatchEngine, BatchLaw

FAULTS = ("none", "http500", "http429", "die", "stall", "malformed", "no_done", "short", "echo_auth",
          "echo_auth_stream")  # fmt: skip


@dataclass
class SyntheticConfig:
    itl_s: float = 0.005  # between chunks
    ttft_s: float = 0.01
    fault: str = "none"
    fault_every: int = 1
    fault_after_tokens: int = 3
    max_running: int = 1_000_000  # slots: requests beyond them wait, first come first served (M/D/s)
    model: str = "synthetic"
    tokens_per_chunk: int = 1
    otlp_endpoint: str | None = None
    span_interval_s: float = 0.1
    spanless_every: int = 0
    stray_spans: int = 0
    kv_cache_tokens: int | None = None  # stated as vLLM 0.32 states it (vllm:cache_config_info), blocks of 16
    kv_usage_per_request: float = 0.0  # vllm:kv_cache_usage_perc while requests run: this x running, at most 1
    reasoning_tokens: int = 0
    reasoning_field: str = "reasoning"
    block_size: int | None = None  # named in a vllm:cache_config_info gauge when set
    batch: BatchLaw | None = None  # continuous batching (server.batching) instead of ttft_s / itl_s / slots


@dataclass
class _State:
    cfg: SyntheticConfig
    counter: itertools.count[int] = field(default_factory=itertools.count)
    stamps: dict[str, list[int]] = field(default_factory=dict)
    arrivals: dict[str, int] = field(default_factory=dict)
    running: int = 0
    waiting: int = 0
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    slots: asyncio.Semaphore | None = None  # made on the server's loop, at its first request
    spans: list[dict[str, Any]] = field(default_factory=list)
    engine: BatchEngine | None = None  # made on the server's loop, at its first request

    def __post_init__(self) -> None:
        r = self.registry
        self.g_running = Gauge("vllm:num_requests_running", "running", registry=r)
        self.g_waiting = Gauge("vllm:num_requests_waiting", "waiting", registry=r)
        self.g_kv = Gauge("vllm:kv_cache_usage_perc", "kv", registry=r)
        self.c_prompt = Counter("vllm:prompt_tokens", "prompt", registry=r)
        self.c_gen = Counter("vllm:generation_tokens", "gen", registry=r)
        self.c_q = Counter("vllm:prefix_cache_queries", "q", registry=r)
        self.c_h = Counter("vllm:prefix_cache_hits", "h", registry=r)
        self.c_pre = Counter("vllm:num_preemptions", "p", registry=r)
        if self.cfg.kv_cache_tokens or self.cfg.block_size is not None:
            size = self.cfg.block_size or 16
            labels = {"block_size": str(size), "engine": "0"}
            if self.cfg.kv_cache_tokens:
                labels |= {"num_gpu_blocks": str(self.cfg.kv_cache_tokens // size),
                           "kv_cache_size_tokens": str(self.cfg.kv_cache_tokens)}  # fmt: skip
            info = Gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", list(labels), registry=r)
            info.labels(**labels).set(1)


STATE: web.AppKey[_State] = web.AppKey("state", _State)


def _word_id(word: str) -> int:
    """``w<N>`` is token N; any other word gets a stable id, so decode(encode(x)) round-trips ids."""
    if word.startswith("w") and word[1:].isdigit():
        return int(word[1:])
    return zlib.crc32(word.encode()) % 50_000 + 1


def _count(text: Any) -> int:
    if isinstance(text, list) and all(isinstance(t, int) for t in text):
        return len(text)  # token ids
    if isinstance(text, list):
        text = " ".join(m.get("content", "") for m in text if isinstance(m, dict))
    return len(str(text).split())


def _usage(prompt: int, n_done: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": n_done, "total_tokens": prompt + n_done}


def _chunk(
    rid: str, tokens: range, prompt: int, chat: bool, finish: str | None, usage: bool, textless: bool = False,
    cfg: SyntheticConfig | None = None,
) -> bytes:  # fmt: skip
    """One event carrying ``tokens`` (ids = positions, 1-based), with the usage so far if asked; of a chat,
    the tokens up to ``cfg.reasoning_tokens`` as reasoning."""
    words = lambda ts: "" if textless else "".join(f" w{tok}" for tok in ts)  # noqa: E731
    text = words(tokens)
    choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
    if chat:
        think = cfg.reasoning_tokens if cfg is not None else 0
        delta = {"content": words(t for t in tokens if t > think)}
        if tokens.start <= think:
            delta[cfg.reasoning_field if cfg else "reasoning"] = words(t for t in tokens if t <= think)
        choice["delta"] = {k: v for k, v in delta.items() if v or k == "content"}
    else:
        choice["text"] = text
    event: dict[str, Any] = {"id": rid, "choices": [choice]}
    if usage:
        event["usage"] = _usage(prompt, tokens.stop - 1)
    return b"data: " + orjson.dumps(event) + b"\n\n"


async def _completions(request: web.Request) -> web.StreamResponse:
    st: _State = request.app[STATE]
    cfg, body = st.cfg, await request.json()
    arrived = time.perf_counter_ns()
    rid = request.headers.get("X-Request-Id", f"req-{next(st.counter)}")
    st.arrivals[rid] = arrived
    index = len(st.stamps)
    st.stamps[rid] = []
    fault = cfg.fault if cfg.fault != "none" and index % cfg.fault_every == 0 else "none"
    if fault in ("http500", "http429"):
        return web.json_response({"error": {"message": f"synthetic {fault}"}}, status=int(fault[4:]))
    if fault == "echo_auth":
        return web.json_response({"error": {"message": _echo(request)}}, status=401)
    chat = "messages" in body
    prompt = _count(body.get("messages") or body.get("prompt", ""))
    n_out = int(body.get("max_tokens") or 16)
    tokens = _engine(st).submit(n_out, arrived) if cfg.batch is not None else None  # before any await
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    if tokens is not None:
        await _batched(st, resp, tokens, rid, prompt, n_out, chat, body.get("stream_options") or {})
        return resp
    if st.slots is None:
        st.slots = asyncio.Semaphore(cfg.max_running)
    st.waiting += 1
    st.g_waiting.set(st.waiting)
    queued = time.perf_counter_ns() if st.slots.locked() else None  # every slot taken: it waits
    try:
        await st.slots.acquire()
    finally:
        st.waiting -= 1
        st.g_waiting.set(st.waiting)
    waited = time.perf_counter_ns() - queued if queued is not None else 0  # for a slot: the span's queue
    st.running += 1
    st.g_running.set(st.running)
    st.g_kv.set(min(1.0, st.running * cfg.kv_usage_per_request))
    st.c_prompt.inc(prompt)
    st.c_q.inc(prompt)
    asked = body.get("stream_options") or {}
    try:
        await _stream(request, resp, rid, fault, prompt, n_out, chat, asked)
    finally:
        st.running -= 1
        st.g_running.set(st.running)
        st.g_kv.set(min(1.0, st.running * cfg.kv_usage_per_request))
        st.slots.release()
    if cfg.otlp_endpoint and not (cfg.spanless_every and (index + 1) % cfg.spanless_every == 0):
        st.spans.append(_span(rid, chat, request.headers.get("traceparent"), arrived, waited, st.stamps[rid]))
    return resp


def _span(
    rid: str, chat: bool, parent: str | None, arrived: int, waited: int, stamps: list[int]
) -> dict[str, Any]:
    """The span vLLM would export for the request (times in ms; the queue is the wait for a slot). Its E2E
    ends at the last token, as vLLM's engine stamps it before the API server sends it: a time taken after
    the write can fall after the client's own end when the client shares this process's GIL."""
    now = time.perf_counter_ns()
    first, last = (stamps[0], stamps[-1]) if stamps else (now, now)
    parts = (parent or "").split("-")
    trace = parts[1] if len(parts) == 4 and len(parts[1]) == 32 else f"{zlib.crc32(rid.encode()):032x}"
    ms = lambda a, b: (b - a) / 1e6  # noqa: E731
    return {"request_id": f"chatcmpl-{rid}" if chat else f"cmpl-{rid}-0", "trace_id": trace,
            "queue_ms": waited / 1e6, "prefill_ms": ms(arrived + waited, first), "decode_ms": ms(first, last),
            "ttft_ms": ms(arrived, first),
            "e2e_ms": ms(arrived, last)}  # fmt: skip


async def _export_spans(app: web.Application) -> Any:
    """Every ``span_interval_s``, the finished requests' spans to ``otlp_endpoint`` (the first batch with
    ``stray_spans`` more);
    a failed export drops its spans, as vLLM's exporter does after its retries."""
    import aiohttp

    from seatrial.server.otlp import PROTOBUF, encode_spans

    st = app[STATE]
    strays = [{"request_id": f"cmpl-stray-{k}-0", "trace_id": f"{k + 1:032x}", "e2e_ms": 1.0}
              for k in range(st.cfg.stray_spans)]  # fmt: skip

    async def loop(http: aiohttp.ClientSession) -> None:
        nonlocal strays
        while True:
            await asyncio.sleep(st.cfg.span_interval_s)
            if st.spans:  # the strays go with the first requests' spans
                batch, st.spans, strays = strays + st.spans, [], []
                body = encode_spans(batch, ("Warmup (CPU)",))
                try:
                    async with http.post(str(st.cfg.otlp_endpoint), data=body,
                                         headers={"Content-Type": PROTOBUF}) as resp:  # fmt: skip
                        await resp.read()
                except (aiohttp.ClientError, OSError):
                    pass

    async with aiohttp.ClientSession() as http:
        task = asyncio.create_task(loop(http))
        yield
        task.cancel()


async def _stream(
    request: web.Request, resp: web.StreamResponse, rid: str, fault: str, prompt: int, n: int, chat: bool,
    asked: dict[str, Any],
) -> None:  # fmt: skip
    st: _State = request.app[STATE]
    cfg = st.cfg
    await asyncio.sleep(cfg.ttft_s)
    start = time.perf_counter_ns()
    per_chunk, sent = bool(asked.get("continuous_usage_stats")), 0
    for k, i in enumerate(range(1, n + 1, cfg.tokens_per_chunk)):  # i: the chunk's first token
        if fault not in ("none", "textless") and i > cfg.fault_after_tokens:
            if fault == "die":
                assert request.transport is not None
                request.transport.abort()
                return
            if fault == "stall":
                await asyncio.sleep(3600)
            if fault == "malformed":
                await resp.write(b"data: {not json\n\n")
                return
            if fault == "echo_auth_stream":
                await resp.write(b"data: " + orjson.dumps({"error": {"message": _echo(request)}}) + b"\n\n")
                return
            break  # no_done and short stop sending tokens here
        due = start + int(k * cfg.itl_s * 1e9)
        delay = (due - time.perf_counter_ns()) / 1e9
        if delay > 0:
            await asyncio.sleep(delay)
        tokens = range(i, min(i + cfg.tokens_per_chunk, n + 1))
        sent = tokens.stop - 1
        st.stamps[rid].append(time.perf_counter_ns())
        finish = "length" if sent == n else None
        st.c_gen.inc(len(tokens))
        if fault == "textless" and chat and finish is None:
            continue  # vLLM sends no chat chunk for a token that decoded to nothing
        await resp.write(_chunk(rid, tokens, prompt, chat, finish, per_chunk, fault == "textless", cfg))
    if fault == "no_done":
        return
    if asked.get("include_usage"):
        usage = {"id": rid, "choices": [], "usage": _usage(prompt, sent)}
        await resp.write(b"data: " + orjson.dumps(usage) + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")


def _echo(request: web.Request) -> str:
    """What a careless server says about the credentials it was sent: the header and the bare token."""
    auth = request.headers.get("Authorization", "")
    return f"Incorrect API key provided: {auth.partition(' ')[2]} (Authorization: {auth})"


def _engine(st: _State) -> BatchEngine:
    assert st.cfg.batch is not None
    if st.engine is None:
        st.engine = BatchEngine(st.cfg.batch)
    return st.engine


async def _batched(
    st: _State, resp: web.StreamResponse, tokens: asyncio.Queue[int], rid: str, prompt: int, n: int, chat: bool,
    asked: dict[str, Any],
) -> None:  # fmt: skip
    """A request the continuous-batching engine took (``tokens``): one chunk per token as its step ends."""
    engine = _engine(st)
    st.c_prompt.inc(prompt)
    per_chunk, sent = bool(asked.get("continuous_usage_stats")), 0
    while await tokens.get():
        sent += 1
        st.stamps[rid].append(time.perf_counter_ns())
        st.c_gen.inc()
        st.g_running.set(len(engine.running))
        st.g_waiting.set(len(engine.waiting))
        await resp.write(_chunk(rid, range(sent, sent + 1), prompt, chat, "length" if sent == n else None, per_chunk))
    if asked.get("include_usage"):
        await resp.write(b"data: " + orjson.dumps({"id": rid, "choices": [], "usage": _usage(prompt, sent)}) + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")


async def _tokenize(request: web.Request) -> web.Response:
    body = await request.json()
    tokens = [_word_id(w) for w in str(body.get("prompt", "")).split()]
    return web.json_response({"count": len(tokens), "tokens": tokens, "max_model_len": 1 << 20})


async def _detokenize(request: web.Request) -> web.Response:
    body = await request.json()
    return web.json_response({"prompt": " ".join(f"w{int(t)}" for t in body.get("tokens", []))})


async def _models(request: web.Request) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": request.app[STATE].cfg.model}]})


async def _metrics(request: web.Request) -> web.Response:
    """As prometheus_client's own app (vLLM's /metrics): ``name[]`` parameters restrict the samples."""
    registry = request.app[STATE].registry
    names = request.query.getall("name[]", [])
    body = generate_latest(registry.restricted_registry(names) if names else registry)
    return web.Response(body=body, content_type="text/plain")


async def _stamps(request: web.Request) -> web.Response:
    return web.Response(body=orjson.dumps(request.app[STATE].stamps), content_type="application/json")


async def _arrivals(request: web.Request) -> web.Response:
    return web.Response(body=orjson.dumps(request.app[STATE].arrivals), content_type="application/json")


async def _health(request: web.Request) -> web.Response:
    return web.Response(text="ok")


def make_app(cfg: SyntheticConfig) -> web.Application:
    app = web.Application()
    app[STATE] = _State(cfg)
    if cfg.otlp_endpoint:
        app.cleanup_ctx.append(_export_spans)
    app.router.add_post("/v1/completions", _completions)
    app.router.add_post("/v1/chat/completions", _completions)
    app.router.add_post("/tokenize", _tokenize)
    app.router.add_post("/detokenize", _detokenize)
    app.router.add_get("/v1/models", _models)
    app.router.add_get("/metrics", _metrics)
    app.router.add_get("/metrics/", _metrics)
    app.router.add_get("/stamps", _stamps)
    app.router.add_get("/arrivals", _arrivals)
    app.router.add_get("/health", _health)
    return app


class ThreadedServer:
    """Runs the synthetic server on its own event loop in a thread (for tests)."""

    def __init__(self, cfg: SyntheticConfig, port: int = 0) -> None:
        self.cfg, self._port = cfg, port
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.url = ""

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        runner = web.AppRunner(make_app(self.cfg), access_log=None)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", self._port)
        self._loop.run_until_complete(site.start())
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        self._runner = runner
        self._ready.set()
        self._loop.run_forever()
        self._loop.run_until_complete(runner.cleanup())

    def __enter__(self) -> ThreadedServer:
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def start_process(
    itl_ms: float, ttft_ms: float = 5.0, slots: int | None = None, extra: list[str] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """The server in a process of its own, so its send stamps never wait for the caller's GIL; returns
    once ``/health`` answers (``extra``: more of :func:`main`'s flags). The caller terminates the process."""
    port = free_port()
    args = ["--port", str(port), "--itl-ms", str(itl_ms), "--ttft-ms", str(ttft_ms), *(extra or [])]
    args += ["--slots", str(slots)] if slots else []
    proc = subprocess.Popen([sys.executable, "-m", "seatrial.testing.server", *args])
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=1):
                return proc, url
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("the synthetic server did not start within 10 s")


def main(argv: list[str] | None = None) -> None:
    """``python -m seatrial.testing.server --port P --itl-ms 20 [--fault F --fault-every K]
    [--tokens-per-chunk N] [--slots N] [--otlp-traces-endpoint URL] [--kv-cache-tokens N]
    [--reasoning-tokens R] [--model NAME]``"""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--itl-ms", type=float, default=5.0)
    ap.add_argument("--ttft-ms", type=float, default=10.0)
    ap.add_argument("--fault", choices=FAULTS, default="none")
    ap.add_argument("--fault-every", type=int, default=1)
    ap.add_argument("--tokens-per-chunk", type=int, default=1)
    ap.add_argument("--slots", type=int, default=1_000_000, help="requests served at once; the rest wait")
    ap.add_argument("--otlp-traces-endpoint", default=None, help="export spans here, as vLLM's flag does")
    ap.add_argument("--kv-cache-tokens", type=int, default=None, help="state this KV capacity, as vLLM 0.32 does")
    ap.add_argument("--reasoning-tokens", type=int, default=0)
    ap.add_argument("--model", default="synthetic")
    ap.add_argument("--batch-slots", type=int, default=None, help="continuous batching: requests run at once")
    ap.add_argument("--step-ms", type=float, default=20.0, help="continuous batching: a step of one request")
    ap.add_argument("--step-growth", type=float, default=0.0, help="continuous batching: a in t0 (1 + a (b - 1))")
    ap.add_argument("--prefill-steps", type=int, default=1, help="continuous batching: steps to the first token")
    a = ap.parse_args(argv)
    law = BatchLaw(a.batch_slots, a.step_ms / 1e3, a.step_growth, a.prefill_steps) if a.batch_slots else None
    cfg = SyntheticConfig(
        itl_s=a.itl_ms / 1e3, ttft_s=a.ttft_ms / 1e3, fault=a.fault, fault_every=a.fault_every,
        tokens_per_chunk=a.tokens_per_chunk, max_running=a.slots, otlp_endpoint=a.otlp_traces_endpoint,
        kv_cache_tokens=a.kv_cache_tokens, reasoning_tokens=a.reasoning_tokens, model=a.model, batch=law,
    )  # fmt: skip
    web.run_app(make_app(cfg), host="127.0.0.1", port=a.port, access_log=None, print=None)


if __name__ == "__main__":
    main()
