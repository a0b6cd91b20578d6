"""A level of requests from a pool of client workers, one of which is killed mid-level (the process
pool's and the Ray pool's tests share it)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Callable

from seatrial.load.client import Endpoint, new_http
from seatrial.load.config import BenchConfig
from seatrial.load.level import LevelOutcome, NoProgress, measure_level, open_session
from seatrial.load.pools import Pool
from seatrial.load.scheduler import LevelLoad
from seatrial.load.share import Sending
from seatrial.testing.server import SyntheticConfig, ThreadedServer


def sending(url: str = "http://127.0.0.1:9", model: str = "m") -> Sending:
    """What every worker of a level L0 sends alike, to ``url``'s completions."""
    return Sending(endpoint=Endpoint(url, model, "completions", {}), timeout_s=30.0, stall_timeout_s=30.0,
                   stamps="user", phase="measure", id_prefix="L0", level=0)  # fmt: skip


def level_with_a_kill(pool: Pool, kill: int, after_s: float, timeout_s: float) -> LevelOutcome:
    """Against a slow synthetic server (20 ms ITL, 40 tokens), 16 requests at C=4, kill worker ``kill``
    ``after_s`` into the level; the pool is closed afterwards."""
    with ThreadedServer(SyntheticConfig(itl_s=0.02, ttft_s=0.005)) as slow:
        try:
            return pooled_level(pool, slow.url, kill, after_s, timeout_s)
        finally:
            pool.close()


def pooled_level(pool: Pool, url: str, kill: int | Callable[[], object] | None, after_s: float, timeout_s: float, *,
                 requests: int = 16, concurrency: int = 4, output_len: int = 40) -> LevelOutcome:  # fmt: skip
    """One level of ``requests`` at ``concurrency`` from ``pool`` against ``url``; worker ``kill`` (or
    ``kill()``, in a thread) killed ``after_s`` into it; TimeoutError when the level does not end within
    ``timeout_s``."""
    cfg = BenchConfig.model_validate({"target": {"url": url}, "workload": {"input_len": 8, "output_len": output_len},
                                      "load": {"concurrency": [concurrency], "requests": requests, "warmup": 0,
                                               "max_lag_ms": 500}})  # fmt: skip

    async def run() -> LevelOutcome:
        async with new_http(60, 30) as http:
            session = await open_session(cfg, http)
            level = asyncio.create_task(
                measure_level(session, cfg, LevelLoad(concurrency), 0, None, NoProgress(), pool)
            )
            if kill is not None:
                await asyncio.sleep(after_s)
                if callable(kill):
                    await asyncio.to_thread(kill)
                else:
                    pool.kill(kill)
            return await asyncio.wait_for(level, timeout_s)

    return asyncio.run(run())


#: run by a helper process: once every worker (argv[2:]) is sending (no thread of it waits on its task
#: pipe), stop the driver (argv[1]) so that the workers' result pipes fill, wait until one of the workers
#: is blocked writing a full pipe, SIGKILL it there, let the driver go on; prints the pid killed and
#: whether it was caught mid-write
_KILLER = """
import os, signal, sys, time
driver, pids = int(sys.argv[1]), [int(p) for p in sys.argv[2:]]
def waits(pid, where):
    try:
        return any(where in open(f"/proc/{pid}/task/{t}/wchan").read() for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return False
deadline = time.monotonic() + 60
while any(waits(p, "pipe_read") for p in pids) and time.monotonic() < deadline:
    time.sleep(0.005)
time.sleep(0.2)
os.kill(driver, signal.SIGSTOP)
try:
    deadline = time.monotonic() + 5
    victim = None
    while victim is None and time.monotonic() < deadline:
        victim = next((p for p in pids if waits(p, "pipe_write")), None)
        time.sleep(0.001)
    caught = victim is not None
    os.kill(victim or pids[0], signal.SIGKILL)
finally:
    os.kill(driver, signal.SIGCONT)
print(victim or pids[0], caught)
"""


def kill_a_worker_mid_write(pids: list[int]) -> tuple[int, bool]:
    """SIGKILL one of the worker processes ``pids`` while it is blocked writing to its pipe (this
    process, the driver, is stopped meanwhile so that the pipes fill): (pid killed, caught mid-write)."""
    done = subprocess.run([sys.executable, "-c", _KILLER, str(os.getpid()), *map(str, pids)],
                          capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    pid, caught = done.stdout.split()
    return int(pid), caught == "True"
