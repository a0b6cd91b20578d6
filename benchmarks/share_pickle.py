"""Benchmark: what a typed worker share costs to hand over, against the dict it replaced (issue 26 item 3).

A level's shares go to the workers pickled (a pipe, or Ray's object store). The typed share
(``seatrial.load.share.WorkerShare``: pydantic, its specs ``RequestSpec`` dataclasses) is pickled once by
``pack`` (the check that it pickles, before any worker is sent one, is that same pickle) and unpickled by
the worker; the peer is the dict that went before (specs as ``__dict__``s, rebuilt with ``RequestSpec(**)``
by the worker). Both are measured in this run on one level of N requests split over W workers, with text
prompts and with token-id prompts (a trace replay's); printed: the best of R rounds of build + pickle +
unpickle (+ rebuild, for the dict) per form, and the ratio typed / dict.

    .venv/bin/python benchmarks/share_pickle.py [--requests 2000] [--tokens 1000] [--workers 4] [--rounds 7]
"""

from __future__ import annotations

import argparse
import pickle
import random
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from seatrial.load.client import Endpoint
from seatrial.load.distributed import split
from seatrial.load.scheduler import LevelLoad
from seatrial.load.share import Sending, pack, unpack
from seatrial.load.workloads import RequestSpec


def best_ms(fn: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times) * 1e3


def specs(kind: str, n: int, tokens: int) -> list[RequestSpec]:
    rng = random.Random(0)
    if kind == "text":
        return [RequestSpec(" ".join(f"w{rng.randrange(10_000)}" for _ in range(tokens)), 128) for _ in range(n)]
    return [RequestSpec([rng.randrange(32_000) for _ in range(tokens)], 128) for _ in range(n)]


def typed(level: list[RequestSpec], workers: int) -> None:
    sending = Sending(endpoint=Endpoint("http://127.0.0.1:8000", "m", "completions", {}), timeout_s=600.0,
                      stall_timeout_s=60.0, stamps="kernel", phase="measure", id_prefix="L0", level=0)  # fmt: skip
    for data in pack(split(level, LevelLoad(workers * 8), workers, sending)).values():
        unpack(data)


def as_dicts(level: list[RequestSpec], workers: int) -> None:
    """The share before issue 26: a dict of the plan's fields, the endpoint's and the specs' ``__dict__``s."""
    n = len(level)
    for w in range(workers):
        mine = list(range(n * w // workers, n * (w + 1) // workers))
        share: dict[str, Any] = {"worker": w, "concurrency": 8, "indices": mine,
                                 "specs": [level[i].__dict__ for i in mine], "rate": None, "arrival": "poisson",
                                 "timed": False, "think_s": 0.0, "lead": 0, "url": "http://127.0.0.1:8000",
                                 "model": "m", "endpoint": "completions", "headers": {}, "continuous_usage": False,
                                 "trace_salt": None, "timeout_s": 600.0, "stall_timeout_s": 60.0, "stamps": "kernel",
                                 "phase": "measure", "id_prefix": "L0", "level": 0, "wall_offset_ns": 0}  # fmt: skip
        back = pickle.loads(pickle.dumps(share, protocol=pickle.HIGHEST_PROTOCOL))
        [RequestSpec(**s) for s in back["specs"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--tokens", type=int, default=1000, help="words (text) or token ids per prompt")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    print(f"{a.requests} requests of {a.tokens}-token prompts over {a.workers} workers, best of {a.rounds}")
    for kind in ("text", "ids"):
        level = specs(kind, a.requests, a.tokens)
        t_typed = best_ms(partial(typed, level, a.workers), a.rounds)
        t_dict = best_ms(partial(as_dicts, level, a.workers), a.rounds)
        print(f"  {kind:4s}  typed share {t_typed:7.1f} ms   dict share {t_dict:7.1f} ms   typed/dict {t_typed / t_dict:.2f}")


if __name__ == "__main__":
    main()
