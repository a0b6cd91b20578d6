"""A level of 16 requests at C=4 from a pool of client workers, one of which is killed mid-level (the
process pool's and the Ray pool's tests share it)."""

from __future__ import annotations

import asyncio

from seatrial.load.bench import LevelOutcome, NoProgress, measure_level, new_http, open_session
from seatrial.load.config import BenchConfig
from seatrial.load.pools import Pool
from seatrial.load.scheduler import LevelPlan
from seatrial.server.synthetic import SyntheticConfig, ThreadedServer


def level_with_a_kill(pool: Pool, kill: int, after_s: float, timeout_s: float) -> LevelOutcome:
    """Against a slow synthetic server (20 ms ITL, 40 tokens), kill worker ``kill`` ``after_s`` into
    the level; the pool is closed afterwards."""
    with ThreadedServer(SyntheticConfig(itl_s=0.02, ttft_s=0.005)) as slow:
        cfg = BenchConfig.model_validate({"target": {"url": slow.url}, "workload": {"input_len": 8, "output_len": 40},
                                          "load": {"concurrency": [4], "requests": 16, "warmup": 0, "max_lag_ms": 500}})  # fmt: skip

        async def run() -> LevelOutcome:
            async with new_http(60, 30) as http:
                session = await open_session(cfg, http)
                level = asyncio.create_task(
                    measure_level(session, cfg, LevelPlan(4), 0, None, NoProgress(), pool)
                )
                await asyncio.sleep(after_s)
                pool.kill(kill)
                return await asyncio.wait_for(level, timeout_s)

        try:
            return asyncio.run(run())
        finally:
            pool.close()
