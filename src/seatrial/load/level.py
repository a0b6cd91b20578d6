"""The level engine every capability shares (bench, accept's trials, capacity's probes, experiment's starts):
a session with the server (its model, metrics and tokenizer), the load's clients, and one level measured as
bench measures it: warm-up, the measured window, cool-down, the server's metrics and spans joined, its
validity judged. ``seatrial bench`` itself (every level of a config in turn) is seatrial.load.bench."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
import numpy as np

from seatrial.errors import ServerError
from seatrial.load.client import Endpoint, new_http
from seatrial.load.config import BenchConfig, ObserveConfig
from seatrial.load.conversation import make_sender
from seatrial.load.distributed import Merge, split, start_times
from seatrial.load.goodput import goodput
from seatrial.load.gpu_telemetry import LevelWatch
from seatrial.load.looplag import LoopLag
from seatrial.load.metrics import client_timing, duration_s, level_metrics
from seatrial.load.models import listed_models
from seatrial.load.pools import Pool, make_pool
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import Delivery, LevelLoad, cooldown_count, frozen_heap, run_level
from seatrial.load.share import Sending, WorkerClock, WorkerStats
from seatrial.load.spans import SpanBook, answered
from seatrial.load.timed import check_endpoint, load_label, open_load, schedule, session_stats, trace_stats
from seatrial.load.tokenize import LocalTokenizer, ServerTokenizer, TokenCounter
from seatrial.load.validity import (
    arrivals,
    check_refused,
    invalid_reasons,
    lateness,
    prompt_mismatches,
)
from seatrial.load.window import held_in_flight, judge_length, steady_window
from seatrial.load.workloads import WORKLOADS, RequestSpec, build_specs, measured_requests
from seatrial.runs.folder import RunFolder
from seatrial.runs.summaries.bench import (
    LevelSummary,
    ServerTiming,
    WorkerTiming,
)
from seatrial.server.otlp import SpanReceiver, parse_listen
from seatrial.server.scrape import MIN_IN_FLIGHT_SAMPLES, Sample, Scraper, engine_block_size, summarize


class Progress(Protocol):
    def level_start(self, label: str, total: int) -> None: ...
    def record(self, rec: RequestRecord) -> None: ...
    def level_end(self, summary: LevelSummary) -> None: ...


class NoProgress:
    def level_start(self, label: str, total: int) -> None: ...
    def record(self, rec: RequestRecord) -> None: ...
    def level_end(self, summary: LevelSummary) -> None: ...


@dataclass
class Session:
    """What a load run needs to talk to one server: HTTP session, endpoint, tokenizer; and what it reads
    beside the requests: the engine's spans (``--otlp-listen``), the GPUs' telemetry (``--gpu-telemetry``)."""

    http: aiohttp.ClientSession
    endpoint: Endpoint
    tokenizer: TokenCounter
    metrics_url: str
    model: str
    spans: SpanBook | None = None
    gpus: LevelWatch | None = None


async def discover_model(http: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> str:
    try:
        async with http.get(f"{url}/v1/models", headers=headers) as resp:
            if resp.status != 200:
                raise ServerError(f"{url}/v1/models answered HTTP {resp.status}")
            body = await resp.read()
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
        raise ServerError(f"cannot reach {url}: {type(exc).__name__}: {exc}") from exc
    models = listed_models(body, f"{url}/v1/models")
    if not models:
        raise ServerError(f"{url}/v1/models lists no model; pass --model")
    return str(models[0]["id"])


async def open_session(
    cfg: BenchConfig, http: aiohttp.ClientSession, spans: SpanBook | None = None
) -> Session:
    t = cfg.target
    headers = t.auth_headers()
    model = t.model or await discover_model(http, t.url, headers)
    tok: TokenCounter = (
        LocalTokenizer(t.tokenizer) if t.tokenizer else ServerTokenizer(http, t.url, model, headers)
    )
    salt = spans.salt if spans is not None else None
    ep = Endpoint(t.url, model, t.endpoint, headers, t.continuous_usage, salt)
    return Session(http, ep, tok, t.resolved_metrics_url, model, spans)


def open_receiver(observe: ObserveConfig) -> SpanReceiver | None:
    """The OTLP receiver ``--otlp-listen`` asks for, listening; None when not asked."""
    if observe.otlp_listen is None:
        return None
    return SpanReceiver(*parse_listen(observe.otlp_listen)).start()


@dataclass
class LevelOutcome:
    summary: LevelSummary
    records: list[RequestRecord] = field(default_factory=list)  # the figures' (load.window)


async def measure_level(
    s: Session,
    cfg: BenchConfig,
    level: LevelLoad,
    index: int,
    folder: RunFolder | None,
    progress: Progress,
    pool: Pool | None = None,
    cut_transient: bool = False,
) -> LevelOutcome:
    """Warm-up (excluded) then the measured requests of one level, with ``/metrics`` scraped throughout;
    with a ``pool`` the measured requests come from its workers (``load.distributed``); a steady level's
    ``window`` from its data, its transient cut from the figures with ``cut_transient`` (load.window)."""
    load, wl = cfg.load, cfg.workload
    label = load_label(level)
    book, held = s.spans, []  # with spans, measured records are written once joined to theirs

    def keep(rec: RequestRecord) -> None:
        if book is not None:
            book.sent(rec)
        if folder and book is not None and rec.phase == "measure":
            held.append(rec)
        elif folder:
            folder.add_request(rec.to_json())
        if rec.phase != "cooldown":
            progress.record(rec)

    lead = load.warmup if load.warmup_leading or leads(level) else 0
    if load.warmup and not lead:
        warm = await build_specs(wl, s.tokenizer, load.warmup, salt=2 * index)
        check_endpoint(warm, s.endpoint)
        progress.level_start(f"{label} warm-up", len(warm))
        warm_sender = make_sender(s.http, s.endpoint)
        warmed, _ = await run_level(
            warm, level, "warmup", f"L{index}-warm", warm_sender, keep, level_index=index
        )
        check_refused(warmed)
    measured = measured_requests(wl, load.requests)
    tail = cooldown_count(level, measured) if WORKLOADS[wl.name].count is None else 0
    specs = await build_specs(wl, s.tokenizer, lead + measured + tail, salt=2 * index + 1)
    check_endpoint(specs, s.endpoint)
    sender = make_sender(s.http, s.endpoint)
    block_size = await engine_block_size(s.http, s.metrics_url) if wl.name == "trace" else None
    level = dataclasses.replace(level, lead=lead, cool_from=lead + measured if tail else None)

    def on_sample(sample: Sample) -> None:
        if folder:
            folder.add_metrics(
                {
                    "t_s": sample.t_s,
                    "level": index,
                    "concurrency": level.concurrency,
                    "in_flight": sample.in_flight,
                    **sample.values,
                }
            )

    delivery = Delivery()
    left = [lead + measured]  # with workers: requests not yet back (the scraper's "in flight")
    busy = (lambda: delivery.in_flight) if pool is None else (lambda: left[0])
    scraper = Scraper(s.http, s.metrics_url, load.scrape_interval_s, on_sample, busy)
    progress.level_start(label, lead + measured)
    await scraper.start()
    lag = LoopLag()  # the loop that reads the streams: this one, or each worker's (pooled ticks)
    merge, timing = None, None
    try:
        with frozen_heap():  # the sweep before the CPU window, as in each worker
            cpu = time.process_time()
            if s.gpus is not None:
                s.gpus.start()
            try:
                if pool is None:
                    async with lag.watching():
                        records, _ = await run_level(
                            specs, level, "measure", f"L{index}", sender, keep, delivery, level_index=index
                        )
                else:
                    merge = await run_shares(s, cfg, level, index, specs, pool, keep, left)
                    records, delivery, lag.late_ms = (
                        merge.records,
                        merge.delivery(level.open_loop),
                        merge.late_ms,
                    )
                    waits = [w.cpu_wait_ms for w in merge.workers if w.cpu_wait_ms is not None]
                    lag.cpu_wait_ms = sum(waits) if waits else None  # every worker's loop, in all
            finally:
                cpu = time.process_time() - cpu
                if s.gpus is not None:
                    s.gpus.stop()
                await scraper.stop()
        served = len(records)  # every request the server saw in the level's window
        records = [r for r in records if r.phase != "cooldown"]  # held the load; never measured
        check_refused(records)
        records = [r for r in records if r.phase == "measure"]  # a leading warm-up's are not measured
        window = None
        if level.ramp is None and not level.timed and WORKLOADS[wl.name].count is None:  # a steady load
            records, _, window = steady_window(records, level.open_loop, cut_transient)
        # the engine's own timing: its spans, else what it stated in each answer (llama.cpp)
        timing = book.join(records, await book.settle(records)) if book is not None else answered(records)
    finally:
        if folder:
            for rec in held:
                folder.add_request(rec.to_json())
    server = summarize(scraper.samples, scraper.failures) | {"scrape_filtered": scraper.filtered}
    workers = sorted(merge.workers, key=lambda w: w.worker) if merge is not None else []
    summary = level_summary(records, delivery, cfg, level, server, lag.summary(), index=index, served=served)
    summary.window = window
    if window is not None and window.stationary is False:
        summary.notes.append(f"window: {window.reason}")
    if window is not None:
        in_flight = held_in_flight(summary.delivery.mean_in_flight, summary.server)
        summary.notes += [n for n in (judge_length(window, len(records), in_flight),) if n]
    if wl.name == "trace":
        summary.trace = trace_stats(wl, specs, records, block_size)
    summary.notes += merge.notes if merge is not None else []
    summary.server_timing = timing
    if s.gpus is not None:
        summary.gpu_telemetry = s.gpus.summary(summary.output_tokens)
        summary.notes += summary.gpu_telemetry.notes
    summary.notes += span_notes(timing)
    summary.client_timing = summary.client_timing.model_copy(
        update={"workers": workers, **client_cpu(records, cpu, workers)}
    )
    progress.level_end(summary)
    return LevelOutcome(summary, records)


async def run_shares(
    s: Session,
    cfg: BenchConfig,
    level: LevelLoad,
    index: int,
    specs: list[RequestSpec],
    pool: Pool,
    keep: Callable[[RequestRecord], None],
    left: list[int],
) -> Merge:
    """The level's requests from the pool's workers, all starting at one time, merged exactly."""
    load = cfg.load
    merge = Merge(pool.clocks, *start_times(), level.concurrency)  # the start is set again at the go
    sending = Sending(endpoint=s.endpoint, timeout_s=load.timeout_s, stall_timeout_s=load.stall_timeout_s,
                      stamps=load.stamps, phase="measure", id_prefix=f"L{index}", level=index)  # fmt: skip
    shares = split(specs, level, pool.size, sending, pool.clocks)

    def on_record(worker: int, rec: RequestRecord, clock: WorkerClock) -> None:
        keep(merge.add(worker, rec, clock))
        left[0] -= rec.phase != "cooldown"

    def on_start() -> int:
        merge.start_wall_ns, merge.start_perf_ns = start_times()
        return merge.start_wall_ns

    outcome = await pool.run(shares, on_record, on_start)
    for share in shares:
        result = outcome.get(share.worker, "no answer")
        if isinstance(result, WorkerStats):
            merge.worker_done(result)
        else:
            for rec in merge.worker_died(share, result):
                keep(rec)
    return merge


def level_summary(
    records: list[RequestRecord],
    delivery: Delivery,
    cfg: BenchConfig,
    level: LevelLoad,
    server: dict[str, Any],
    loop_lag: dict[str, float | None] | None = None,
    index: int = 0,
    served: int | None = None,
) -> LevelSummary:
    """The level's metrics, server view, client self-checks (``loop_lag``: :class:`LoopLag` summary)
    and validity; ``served`` the requests the server saw in the level's window (a leading warm-up and the
    cool-down too; default: ``records``)."""
    cpu_wait = (loop_lag or {}).get("cpu_wait_ms")
    shape = level.gap_shape
    reasons = invalid_reasons(
        records, delivery, cfg.load, level.concurrency, not level.open_loop, cpu_wait, shape
    )
    lags = [r.lag_ms for r in records]
    judged = arrivals(records, shape) if level.open_loop else None
    return LevelSummary.model_validate(
        {
            "index": index,
            "concurrency": level.concurrency,
            "rate": level.rate,
            **level_metrics(records),
            "server": server,
            "delivery": {
                "mean_in_flight": delivery.mean_in_flight,
                "dispatch_window_s": delivery.window_s,
                "scheduled_rate": delivery.scheduled_rate,
                "achieved_rate": delivery.achieved_rate,
                "scheduled_cv": delivery.scheduled_cv,
                "achieved_cv": delivery.achieved_cv,
                "rate_shortfall_allowed": judged["rate_shortfall_allowed"] if judged else None,
                "cv2_law": judged["law_cv2"] if judged else None,
                "cv2_allowed": judged["cv2_allowed"] if judged else None,
                "lag_ms_p99": float(np.percentile(lags, 99)) if lags else None,
            },
            "schedule": schedule(level) if level.open_loop else None,
            "lateness": lateness(records) if level.open_loop else None,
            "sessions": session_stats(records),
            "client_timing": client_timing(records, loop_lag or {}, max_lag_ms=cfg.load.max_lag_ms),
            "prompt_token_mismatches": prompt_mismatches(records),
            "goodput": None
            if cfg.load.goodput is None
            else goodput(
                records,
                cfg.load.goodput,
                duration_s(records),
                in_flight=delivery.mean_in_flight,
                open_loop=level.open_loop,
            ),
            "valid": not reasons,
            "invalid_reasons": reasons,
            "notes": level_flags(server, cfg, len(records) if served is None else served),
        }
    )


def client_cpu(records: list[RequestRecord], driver_s: float, workers: list[WorkerTiming]) -> dict[str, Any]:
    """The client's CPU over the measured level (this process, and its workers'), and per token event:
    what the load cost the machine it ran on."""
    total = driver_s + sum(w.cpu_s or 0.0 for w in workers)
    events = sum(r.chunks for r in records if r.ok)
    return {
        "cpu_s": total,
        "driver_cpu_s": driver_s,
        "cpu_us_per_event": total / events * 1e6 if events else None,
    }


def span_notes(timing: ServerTiming | None) -> list[str]:
    """What the span join says about the level: measured requests that got no span from the engine."""
    if timing is None or timing.status != "MEASURED" or not timing.without_span:
        return []
    if timing.source == "answer":
        return [f"{timing.without_span} of {timing.requests} measured requests' answers stated no timings "
                "(their server_timing is null)"]  # fmt: skip
    return [
        f"{timing.without_span} of {timing.requests} measured requests got no span from the engine within "
        f"{timing.flush_bound_s:g} s (their server_timing is null)"
    ]


def level_flags(server: dict[str, Any], cfg: BenchConfig, requests: int) -> list[str]:
    """What the server view says about the measurement: too few scrapes while requests were in flight
    (its gauges are then n/a or incomplete), prefix-cache hits that a workload sharing no prefix cannot
    have earned (the same prompts sent before: TTFT lower for the wrong reason). Up to one hit token per
    request is the BOS token every prompt starts with (llama-server counts it; vLLM's blocks are larger)."""
    notes = []
    busy = server.get("in_flight_samples", 0)
    if busy < MIN_IN_FLIGHT_SAMPLES:
        notes.append(
            f"only {busy} /metrics scrapes while requests were in flight (< {MIN_IN_FLIGHT_SAMPLES}): "
            "the server's gauges for this level are incomplete, n/a where none"
        )
    hits = server.get("prefix_cache_hits")
    if hits and hits > requests and not cfg.workload.shares_prefix:
        notes.append(
            f"the server counted {hits:,.0f} prefix-cache hit tokens although this workload shares no prefix: "
            "prompts were served from cache (sent before, or repeated), so TTFT is lower for the wrong reason"
        )
    return notes


def leads(level: LevelLoad) -> bool:
    """An open loop at a rate sends its warm-up as the start of its own stream, so that its queue is in its
    steady state when the measured requests begin (a warm-up level of its own would drain before them); a
    closed loop's, a ramp's and a timed workload's warm-up is a level of its own."""
    return level.rate is not None and level.ramp is None and not level.timed


def level_loads(cfg: BenchConfig) -> list[LevelLoad]:
    """The load of each level: closed-loop levels, one open-loop level (a rate, a ramp of rates), or a timed
    workload's one level at its own times."""
    load, wl = cfg.load, cfg.workload
    n = measured_requests(wl, load.requests)
    cap = load.max_concurrency or max(n, load.warmup, 1)
    if WORKLOADS[wl.name].timed:
        return [LevelLoad(cap, arrival=wl.name, timed=True, think_s=wl.think_time_ms / 1000)]
    if load.open_loop:
        return [open_load(load, cap, wl.seed or 0)]
    return [LevelLoad(c) for c in load.concurrency]


@dataclass
class Loaded:
    """What a run measures with, open: the session, the client pool (None: this process), the span book."""

    session: Session
    pool: Pool | None
    spans: SpanBook | None
    http: aiohttp.ClientSession


@contextlib.asynccontextmanager
async def loaded(cfg: BenchConfig, receiver: SpanReceiver | None = None) -> AsyncIterator[Loaded]:
    """The session, client pool, span receiver and GPU watch a run of ``cfg`` asks for, closed on the way
    out. ``receiver``: an OTLP receiver that outlives the run (experiment: one for all starts); else
    ``--otlp-listen``'s own."""
    load, own = cfg.load, receiver is None
    pool: Pool | None = None
    gpus: LevelWatch | None = None
    try:
        receiver = open_receiver(cfg.observe) if own else receiver
        book = SpanBook(receiver, cfg.observe.otlp_flush_s) if receiver is not None else None
        gpus = LevelWatch(load.ray) if cfg.observe.gpu_telemetry else None
        async with new_http(load.timeout_s, load.stall_timeout_s, load.stamps == "kernel") as http:
            s = await open_session(cfg, http, book)
            s.gpus = gpus
            pool = make_pool(load.workers, load.ray, load.clients)  # once the server answered: no workers for none
            yield Loaded(s, pool, book, http)
    finally:
        if pool is not None:
            pool.close()
        if own and receiver is not None:
            receiver.stop()
        if gpus is not None:
            gpus.close()
