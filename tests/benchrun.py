"""One bench run from a test, as ``seatrial bench --out`` makes it: the config's levels into a fresh run
folder (run.json, requests.jsonl, server_metrics.jsonl), the summary as summary.json holds it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from seatrial.load.bench import run_bench
from seatrial.load.config import BenchConfig
from seatrial.runs import RunFolder


def bench_into(cfg: BenchConfig, out: Path, timeout_s: float | None = 60.0) -> dict[str, Any]:
    """``cfg`` run into the run folder ``out``; a run past ``timeout_s`` (None: no limit) fails the test."""
    with RunFolder(out, "bench", cfg.model_dump(mode="json")) as folder:
        return asyncio.run(asyncio.wait_for(run_bench(cfg, folder), timeout=timeout_s)).to_json()
