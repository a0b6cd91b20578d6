"""Scrape an engine's ``/metrics`` during a level; keep every sample and summarize the level.

The first scrapes come fast (:data:`RAMP_S`: five within a quarter of a second) and the rest at the
configured interval, so that a level of under a second still has at least five scrapes while its
requests are in flight, and a long one costs the server one scrape a second. Each sample records how
many requests the client had in flight when it was taken; a gauge (running, waiting, KV usage) is read
only from in-flight samples, and is None when no in-flight scrape covered the level.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from seatrial.server.capacity import cache_info
from seatrial.server.prom import COUNTERS, GAUGES, HISTOGRAMS, filtered_url, parse_metrics

#: Seconds between the first scrapes of a level, before the configured interval takes over.
RAMP_S = (0.05, 0.05, 0.05, 0.05, 0.1, 0.2, 0.4)
MIN_IN_FLIGHT_SAMPLES = 5


@dataclass
class Sample:
    t_s: float  # seconds since the Unix epoch
    values: dict[str, float]
    in_flight: int | None = None  # requests the client had in flight when the scrape was taken


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
    in_flight: Callable[[], int] | None = None
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
        busy = self.in_flight() if self.in_flight is not None else None
        try:
            values = await self._values()
            sample = Sample(time.time(), values, busy)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError, ValueError) as exc:
            self.failures += 1
            self.last_error = f"{type(exc).__name__}: {exc}"
            return None
        self.samples.append(sample)
        if self.on_sample:
            self.on_sample(sample)
        return sample

    def schedule(self) -> list[float]:
        """The waits of the ramp, then the configured interval (never slower than it)."""
        return [min(s, self.interval_s) for s in RAMP_S]

    async def _loop(self) -> None:
        ramp = self.schedule()
        while True:
            started = time.perf_counter()
            await self.scrape_once()
            wait = ramp.pop(0) if ramp else self.interval_s
            await asyncio.sleep(max(0.0, wait - (time.perf_counter() - started)))

    async def start(self) -> None:
        await self.scrape_once()  # a baseline for counter deltas
        self._task = asyncio.create_task(self._sleep_then_loop())

    async def _sleep_then_loop(self) -> None:
        await asyncio.sleep(RAMP_S[0])
        await self._loop()

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.scrape_once()  # the closing value for counter deltas


async def engine_block_size(session: aiohttp.ClientSession, url: str) -> int | None:
    """The engine's KV-cache block size, from ``vllm:cache_config_info``'s ``block_size`` at ``url`` (its
    ``/metrics``); None where it cannot be read or does not say."""
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=10)) as resp:
            text = await resp.text() if resp.status == 200 else ""
    except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
        return None
    size = cache_info(text).get("block_size", "")
    return int(size) if size.isdigit() and int(size) > 0 else None


#: where an absent quantity's names per engine are listed
ABSENT_HINT = "the names seatrial reads per engine: seatrial.server.engines; docs/engines.md"


def summarize(samples: list[Sample], failures: int = 0) -> dict[str, Any]:
    """Per-level server view: maxima of gauges over the scrapes taken while requests were in flight
    (None when none was), deltas of counters (None where the engine lacks them: then also in
    ``unavailable`` with the reason), and the engine's own
    mean latencies over the requests it finished between the first and last sample (``<h>_ms_mean``
    over ``<h>_count`` observations; absent where it has no such histogram). Samples that do not say
    whether requests were in flight (a snapshot outside a level) all count as in flight."""
    busy = [s for s in samples if s.in_flight is None or s.in_flight > 0]
    out: dict[str, Any] = {
        "samples": len(samples),
        "in_flight_samples": len(busy),
        "scrape_failures": failures,
    }
    if len(busy) >= 2:
        span = busy[-1].t_s - busy[0].t_s
        out["in_flight_scrape_hz"] = (len(busy) - 1) / span if span > 0 else None
    for g in GAUGES:
        vals = [s.values[g] for s in busy if g in s.values]
        out[f"{g}_max"] = max(vals) if vals else None
    held = [s.values["running"] + s.values.get("waiting", 0.0) for s in busy if "running" in s.values]
    out["in_system_mean"] = sum(held) / len(held) if held else None  # running + waiting, mean over the scrapes
    for c in COUNTERS:
        vals = [s.values[c] for s in samples if c in s.values]
        out[c] = (vals[-1] - vals[0]) if len(vals) >= 2 else None
    if samples:  # a quantity no scrape had: the engine does not export it (None above, never 0)
        absent = [q for q in (*GAUGES, *COUNTERS) if not any(q in s.values for s in samples)]
        out["unavailable"] = {q: f"UNAVAILABLE: the server's /metrics has no {q} ({ABSENT_HINT})" for q in absent}
    for h in HISTOGRAMS:
        both = [s.values for s in samples if f"{h}_sum" in s.values and f"{h}_count" in s.values]
        count = both[-1][f"{h}_count"] - both[0][f"{h}_count"] if len(both) >= 2 else 0
        if count > 0:
            out[f"{h}_ms_mean"] = 1000 * (both[-1][f"{h}_sum"] - both[0][f"{h}_sum"]) / count
            out[f"{h}_count"] = int(count)
    return out
