"""``seatrial bench``: every level of a config in turn, each warmed up, then measured with the server's metrics
joined (the level engine: seatrial.load.level); the summary written after each level."""

from __future__ import annotations

import asyncio

from seatrial.load.config import BenchConfig
from seatrial.load.level import NoProgress, Progress, Session, level_loads, loaded, measure_level
from seatrial.load.plancheck import check_plan
from seatrial.load.pools import Pool
from seatrial.load.validity import starvation_note
from seatrial.runs.folder import RunFolder
from seatrial.runs.summaries.bench import BenchSummary, ClientClock, ClientPool
from seatrial.server.otlp import SpanReceiver


async def run_bench(
    cfg: BenchConfig,
    folder: RunFolder | None = None,
    progress: Progress | None = None,
    receiver: SpanReceiver | None = None,
    kv_line: str | None = None,
) -> BenchSummary:
    """Every level of ``cfg``; the summary is written to the run folder after each level. ``receiver``: see
    :func:`loaded`. ``kv_line``: the engine's KV-capacity log line, for ``--plan`` where its ``/metrics``
    does not say it."""
    progress = progress or NoProgress()
    result = BenchSummary(endpoint=cfg.target.endpoint, workload=cfg.workload.name)
    book = None
    try:
        async with loaded(cfg, receiver) as run:
            book, s = run.spans, run.session
            if run.pool is not None:
                clocks = [ClientClock.model_validate(c.to_json()) for c in run.pool.clocks.values()]
                result.clients = ClientPool(workers=run.pool.size, ray=cfg.load.ray, clocks=clocks)
            result.model = s.model
            if cfg.observe.plan is not None:
                result.plan_check = await check_plan(cfg.observe.plan, run.http, s.metrics_url, kv_line)
            await _levels(s, cfg, folder, progress, run.pool, result)
    finally:
        if book is not None:
            result.spans = book.counts()
    result.valid = all(level.valid for level in result.levels)
    waits = [(lv.client_timing.cpu_wait_ms, lv.duration_s) for lv in result.levels]
    result.notes += [n for n in (starvation_note(waits, cfg.target.url),) if n]
    if folder:
        folder.write_summary(result)
    return result


async def _levels(
    s: Session, cfg: BenchConfig, folder: RunFolder | None, progress: Progress, pool: Pool | None,
    result: BenchSummary,
) -> None:  # fmt: skip
    """Every level in turn; the summary so far is written after each (and when interrupted)."""
    try:
        for index, level in enumerate(level_loads(cfg)):
            result.levels.append((await measure_level(s, cfg, level, index, folder, progress, pool)).summary)
            if folder:
                folder.write_summary(result)
    except asyncio.CancelledError:
        result.interrupted = True
        if folder:
            folder.write_summary(result)
        raise
