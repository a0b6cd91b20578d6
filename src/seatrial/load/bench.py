"""``seatrial bench``: for each load level, warm up, then measure with the server's metrics joined."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
import numpy as np

from seatrial.errors import ServerError
from seatrial.load.client import Endpoint, send
from seatrial.load.config import BenchConfig
from seatrial.load.distributed import Merge, split, start_times
from seatrial.load.looplag import LoopLag
from seatrial.load.metrics import client_timing, level_metrics
from seatrial.load.pools import Pool, make_pool
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import Delivery, LevelPlan, frozen_heap, run_level
from seatrial.load.stamps import stamped_socket
from seatrial.load.tokenize import LocalTokenizer, ServerTokenizer, TokenCounter
from seatrial.load.validity import invalid_reasons, prompt_mismatches
from seatrial.load.workloads import build_specs
from seatrial.runs.folder import RunFolder
from seatrial.server.scrape import MIN_IN_FLIGHT_SAMPLES, Sample, Scraper, summarize

KEEPALIVE_S = 3.0


class Progress(Protocol):
    def level_start(self, label: str, total: int) -> None: ...
    def record(self, rec: RequestRecord) -> None: ...
    def level_end(self, summary: dict[str, Any]) -> None: ...


class NoProgress:
    def level_start(self, label: str, total: int) -> None: ...
    def record(self, rec: RequestRecord) -> None: ...
    def level_end(self, summary: dict[str, Any]) -> None: ...


@dataclass
class Session:
    """What a load run needs to talk to one server: HTTP session, endpoint, tokenizer."""

    http: aiohttp.ClientSession
    endpoint: Endpoint
    tokenizer: TokenCounter
    metrics_url: str
    model: str


async def discover_model(http: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> str:
    try:
        async with http.get(f"{url}/v1/models", headers=headers) as resp:
            if resp.status != 200:
                raise ServerError(f"{url}/v1/models answered HTTP {resp.status}")
            data = await resp.json()
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError) as exc:
        raise ServerError(f"cannot reach {url}: {type(exc).__name__}: {exc}") from exc
    models = [m.get("id") for m in data.get("data", []) if isinstance(m, dict)]
    if not models:
        raise ServerError(f"{url}/v1/models lists no model; pass --model")
    return str(models[0])


def new_http(timeout_s: float, stall_timeout_s: float, kernel_stamps: bool = True) -> aiohttp.ClientSession:
    timeout = aiohttp.ClientTimeout(total=timeout_s, sock_read=stall_timeout_s, sock_connect=10)
    # Idle connections are dropped before the server drops them (uvicorn: 5 s), so a request never
    # goes out on a socket the server is closing ("Server disconnected" that is no fault of the server).
    connector = aiohttp.TCPConnector(
        limit=0,
        ttl_dns_cache=300,
        keepalive_timeout=KEEPALIVE_S,
        socket_factory=stamped_socket if kernel_stamps else None,
    )
    return aiohttp.ClientSession(timeout=timeout, connector=connector, raise_for_status=False)


async def open_session(cfg: BenchConfig, http: aiohttp.ClientSession) -> Session:
    t = cfg.target
    headers = t.auth_headers()
    model = t.model or await discover_model(http, t.url, headers)
    tok: TokenCounter = (
        LocalTokenizer(t.tokenizer) if t.tokenizer else ServerTokenizer(http, t.url, model, headers)
    )
    ep = Endpoint(t.url, model, t.endpoint, headers, t.continuous_usage)
    return Session(http, ep, tok, t.resolved_metrics_url, model)


@dataclass
class LevelOutcome:
    summary: dict[str, Any]
    records: list[RequestRecord] = field(default_factory=list)


async def measure_level(
    s: Session,
    cfg: BenchConfig,
    plan: LevelPlan,
    index: int,
    folder: RunFolder | None,
    progress: Progress,
    pool: Pool | None = None,
) -> LevelOutcome:
    """Warm-up (excluded) then the measured requests of one level, with ``/metrics`` scraped throughout;
    with a ``pool`` the measured requests come from its workers (``load.distributed``)."""
    load, wl = cfg.load, cfg.workload
    label = f"C={plan.concurrency}" if plan.rate is None else f"rate={plan.rate:g}/s"

    def keep(rec: RequestRecord) -> None:
        if folder:
            folder.add_request(rec.to_json())
        progress.record(rec)

    async def sender(spec: Any, rec: RequestRecord) -> RequestRecord:
        return await send(s.http, s.endpoint, spec, rec)

    if load.warmup:
        warm = await build_specs(wl, s.tokenizer, load.warmup, salt=2 * index)
        progress.level_start(f"{label} warm-up", len(warm))
        await run_level(warm, plan, "warmup", f"L{index}-warm", sender, keep)
    specs = await build_specs(wl, s.tokenizer, load.requests, salt=2 * index + 1)

    def on_sample(sample: Sample) -> None:
        if folder:
            folder.add_metrics(
                {
                    "t_s": sample.t_s,
                    "level": index,
                    "concurrency": plan.concurrency,
                    "in_flight": sample.in_flight,
                    **sample.values,
                }
            )

    delivery = Delivery()
    left = [len(specs)]  # with workers: requests not yet back (the scraper's "in flight")
    busy = (lambda: delivery.in_flight) if pool is None else (lambda: left[0])
    scraper = Scraper(s.http, s.metrics_url, load.scrape_interval_s, on_sample, busy)
    progress.level_start(label, len(specs))
    await scraper.start()
    lag = LoopLag()  # the loop that reads the streams: this one, or each worker's (pooled ticks)
    merge = None
    with frozen_heap():  # the sweep before the CPU window, as in each worker
        cpu = time.process_time()
        try:
            if pool is None:
                async with lag.watching():
                    records, _ = await run_level(specs, plan, "measure", f"L{index}", sender, keep, delivery)
            else:
                merge = await run_shares(s, cfg, plan, index, specs, pool, keep, left)
                records, delivery, lag.late_ms = merge.records, merge.delivery(), merge.late_ms
        finally:
            cpu = time.process_time() - cpu
            await scraper.stop()
    server = summarize(scraper.samples, scraper.failures) | {"scrape_filtered": scraper.filtered}
    summary = {"index": index, **level_summary(records, delivery, cfg, plan, server, lag.summary())}
    timing = summary["client_timing"]
    if merge is not None:
        timing["workers"] = sorted(merge.workers, key=lambda w: w["worker"])
        summary["notes"] += merge.notes
    timing |= client_cpu(records, cpu, timing.get("workers", []))
    progress.level_end(summary)
    return LevelOutcome(summary, records)


async def run_shares(
    s: Session,
    cfg: BenchConfig,
    plan: LevelPlan,
    index: int,
    specs: list[Any],
    pool: Pool,
    keep: Any,
    left: list[int],
) -> Merge:
    """The level's requests from the pool's workers, all starting at one time, merged exactly."""
    t, load = cfg.target, cfg.load
    merge = Merge(pool.clocks, *start_times(), plan.concurrency)  # the start is set again at the go
    shares = split(specs, plan, pool.size)
    for share in shares:
        share |= {
            "url": s.endpoint.base_url, "model": s.model, "endpoint": t.endpoint, "headers": s.endpoint.headers,
            "continuous_usage": t.continuous_usage, "timeout_s": load.timeout_s,
            "stall_timeout_s": load.stall_timeout_s, "stamps": load.stamps, "phase": "measure",
            "id_prefix": f"L{index}", "wall_offset_ns": pool.clocks[share["worker"]].wall_offset_ns,
        }  # fmt: skip

    def on_record(worker: int, row: dict[str, Any]) -> None:
        keep(merge.add(worker, row))
        left[0] -= 1

    def on_start() -> int:
        merge.start_wall_ns, merge.start_perf_ns = start_times()
        return merge.start_wall_ns

    outcome = await pool.run(shares, on_record, on_start)
    for share in shares:
        result = outcome.get(share["worker"], "no answer")
        if isinstance(result, dict):
            merge.worker_done(share["worker"], result)
        else:
            for rec in merge.worker_died(share["worker"], share, result, f"L{index}", "measure"):
                keep(rec)
    return merge


def level_summary(
    records: list[RequestRecord],
    delivery: Delivery,
    cfg: BenchConfig,
    plan: LevelPlan,
    server: dict[str, Any],
    loop_lag: dict[str, float | None] | None = None,
) -> dict[str, Any]:
    """The level's metrics, server view, client self-checks (``loop_lag``: :class:`LoopLag` summary)
    and validity."""
    reasons = invalid_reasons(records, delivery, cfg.load, plan.concurrency, plan.rate is None)
    lags = [r.lag_ms for r in records]
    notes = level_flags(server, cfg)
    return {
        "concurrency": plan.concurrency,
        "rate": plan.rate,
        **level_metrics(records),
        "server": server,
        "delivery": {
            "mean_in_flight": delivery.mean_in_flight,
            "dispatch_window_s": delivery.window_s,
            "scheduled_rate": delivery.scheduled_rate,
            "achieved_rate": delivery.achieved_rate,
            "lag_ms_p99": float(np.percentile(lags, 99)) if lags else None,
        },
        "client_timing": client_timing(records, loop_lag or {}, max_lag_ms=cfg.load.max_lag_ms),
        "prompt_token_mismatches": prompt_mismatches(records),
        "valid": not reasons,
        "invalid_reasons": reasons,
        "notes": notes,
    }


def client_cpu(
    records: list[RequestRecord], driver_s: float, workers: list[dict[str, Any]]
) -> dict[str, Any]:
    """The client's CPU over the measured level (this process, and its workers'), and per token event:
    what the load cost the machine it ran on."""
    total = driver_s + sum(w.get("cpu_s") or 0.0 for w in workers)
    events = sum(r.chunks for r in records if r.ok)
    return {
        "cpu_s": total,
        "driver_cpu_s": driver_s,
        "cpu_us_per_event": total / events * 1e6 if events else None,
    }


def level_flags(server: dict[str, Any], cfg: BenchConfig) -> list[str]:
    """What the server view says about the measurement: too few scrapes while requests were in flight
    (its gauges are then n/a or incomplete), prefix-cache hits that a workload sharing no prefix cannot
    have earned (the same prompts sent before: TTFT lower for the wrong reason)."""
    notes = []
    busy = server.get("in_flight_samples", 0)
    if busy < MIN_IN_FLIGHT_SAMPLES:
        notes.append(
            f"only {busy} /metrics scrapes while requests were in flight (< {MIN_IN_FLIGHT_SAMPLES}): "
            "the server's gauges for this level are incomplete, n/a where none"
        )
    hits = server.get("prefix_cache_hits")
    if hits and not cfg.workload.shares_prefix:
        notes.append(
            f"the server counted {hits:,.0f} prefix-cache hit tokens although this workload shares no prefix: "
            "prompts were served from cache (sent before, or repeated), so TTFT is lower for the wrong reason"
        )
    return notes


def level_plans(cfg: BenchConfig) -> list[LevelPlan]:
    load = cfg.load
    if load.rate is not None:
        cap = load.max_concurrency or load.requests
        return [LevelPlan(cap, load.rate, load.arrival, cfg.workload.seed or 0)]
    return [LevelPlan(c) for c in load.concurrency]


async def run_bench(
    cfg: BenchConfig, folder: RunFolder | None = None, progress: Progress | None = None
) -> dict[str, Any]:
    """Every level of ``cfg``; returns ``{"levels": [...], ...}`` and writes it to the run folder."""
    progress = progress or NoProgress()
    levels: list[dict[str, Any]] = []
    result: dict[str, Any] = {"levels": levels}
    load = cfg.load
    pool = make_pool(load.workers, load.ray, load.clients)
    if pool is not None:
        result["clients"] = {
            "workers": pool.size,
            "ray": load.ray,
            "clocks": [c.to_json() for c in pool.clocks.values()],
        }
    try:
        async with new_http(load.timeout_s, load.stall_timeout_s, load.stamps == "kernel") as http:
            s = await open_session(cfg, http)
            result.update(model=s.model, endpoint=cfg.target.endpoint, workload=cfg.workload.name)
            await _levels(s, cfg, folder, progress, pool, result)
    finally:
        if pool is not None:
            pool.close()
    result["valid"] = all(level["valid"] for level in levels)
    if folder:
        folder.write_summary(result)
    return result


async def _levels(
    s: Session, cfg: BenchConfig, folder: RunFolder | None, progress: Progress, pool: Pool | None,
    result: dict[str, Any],
) -> None:  # fmt: skip
    """Every level in turn; the summary so far is written after each (and when interrupted)."""
    levels = result["levels"]
    try:
        for index, plan in enumerate(level_plans(cfg)):
            levels.append((await measure_level(s, cfg, plan, index, folder, progress, pool)).summary)
            if folder:
                folder.write_summary(result)
    except asyncio.CancelledError:
        result["interrupted"] = True
        if folder:
            folder.write_summary(result)
        raise
