"""Scrape an engine's ``/metrics`` during a level; keep every sample and summarize the level."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from seatrial.server.prom import COUNTERS, GAUGES, HISTOGRAMS, filtered_url, parse_metrics


@dataclass
class Sample:
    t_s: float  # seconds since the Unix epoch
    values: dict[str, float]


@dataclass
class Scraper:
    """Polls ``url`` every ``interval_s`` while running; failures are counted, never raised.

    It asks for only the samples it reads (``filtered_url``) while the server answers that with at
    least one of them; otherwise (a server whose registry cannot filter, such as vLLM's multiprocess
    one, or that refuses the query) it scrapes the whole ``url`` from then on. ``filtered`` says which
    it asks for.
    """

    session: aiohttp.ClientSession
    url: str
    interval_s: float = 0.5
    on_sample: Callable[[Sample], None] | None = None
    samples: list[Sample] = field(default_factory=list)
    failures: int = 0
    last_error: str | None = None
    filtered: bool = True
    _task: asyncio.Task[None] | None = None

    async def _get(self, url: str) -> dict[str, float]:
        timeout = aiohttp.ClientTimeout(total=max(2.0, self.interval_s * 4))
        async with self.session.get(url, timeout=timeout) as resp:
            if resp.status != 200:
                raise aiohttp.ClientResponseError(resp.request_info, (), status=resp.status)
            return parse_metrics(await resp.text())

    async def _values(self) -> dict[str, float]:
        if self.filtered:
            with contextlib.suppress(aiohttp.ClientResponseError):
                values = await self._get(filtered_url(self.url))
                if values:
                    return values
            self.filtered = False
        return await self._get(self.url)

    async def scrape_once(self) -> Sample | None:
        try:
            values = await self._values()
            sample = Sample(time.time(), values)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError) as exc:
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            return None
        self.samples.append(sample)
        if self.on_sample:
            self.on_sample(sample)
        return sample

    async def _loop(self) -> None:
        while True:
            started = time.perf_counter()
            await self.scrape_once()
            await asyncio.sleep(max(0.0, self.interval_s - (time.perf_counter() - started)))

    async def start(self) -> None:
        await self.scrape_once()  # a baseline for counter deltas
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.scrape_once()  # the closing value for counter deltas


def summarize(samples: list[Sample], failures: int = 0) -> dict[str, Any]:
    """Per-level server view: maxima of gauges, deltas of counters (None where the engine lacks them),
    and the engine's own mean latencies over the requests it finished between the first and last
    sample (``<h>_ms_mean`` over ``<h>_count`` observations; absent where it has no such histogram)."""
    out: dict[str, Any] = {"samples": len(samples), "scrape_failures": failures}
    for g in GAUGES:
        vals = [s.values[g] for s in samples if g in s.values]
        out[f"{g}_max"] = max(vals) if vals else None
    for c in COUNTERS:
        vals = [s.values[c] for s in samples if c in s.values]
        out[c] = (vals[-1] - vals[0]) if len(vals) >= 2 else None
    for h in HISTOGRAMS:
        both = [s.values for s in samples if f"{h}_sum" in s.values and f"{h}_count" in s.values]
        count = both[-1][f"{h}_count"] - both[0][f"{h}_count"] if len(both) >= 2 else 0
        if count > 0:
            out[f"{h}_ms_mean"] = 1000 * (both[-1][f"{h}_sum"] - both[0][f"{h}_sum"]) / count
            out[f"{h}_count"] = int(count)
    return out
