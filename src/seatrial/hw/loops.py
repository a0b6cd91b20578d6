"""Timed loops and per-GPU concurrency shared by the precision and burn trials."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

T = TypeVar("T")
CHUNK_TARGET_S = 0.25
BARRIER_TIMEOUT_S = 900.0


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@dataclass
class LoopResult:
    """``iterations`` products in ``elapsed_s`` wall seconds between ``start_unix_s`` and ``end_unix_s``."""

    iterations: int
    elapsed_s: float
    start_unix_s: float
    end_unix_s: float
    last: Any


def timed_loop(
    step: Callable[[], Any],
    device: torch.device,
    duration_s: float,
    after_chunk: Callable[[Any], None] | None = None,
) -> LoopResult:
    """Run ``step`` back to back for at least ``duration_s``, synchronising only between chunks of
    about CHUNK_TARGET_S, so that the timed work is the kernels alone.
    ``after_chunk`` sees the last output of each chunk."""
    synchronize(device)
    t = time.perf_counter_ns()
    last = step()
    synchronize(device)
    per_iter_s = max((time.perf_counter_ns() - t) / 1e9, 1e-6)
    chunk = max(1, int(CHUNK_TARGET_S / per_iter_s))
    start_unix_s, t0 = time.time(), time.perf_counter_ns()
    iterations = 0
    while True:
        for _ in range(chunk):
            last = step()
        synchronize(device)
        iterations += chunk
        if after_chunk is not None:
            after_chunk(last)
        elapsed_s = (time.perf_counter_ns() - t0) / 1e9
        if elapsed_s >= duration_s:
            return LoopResult(iterations, elapsed_s, start_unix_s, time.time(), last)


def run_per_device(
    work: Callable[[int, torch.device, threading.Barrier], T], devices: dict[int, torch.device]
) -> dict[int, T | BaseException]:
    """Run ``work(gpu, device, barrier)`` in one thread per GPU at once; an exception is that GPU's result.

    ``barrier`` (one party per GPU) lets the threads start their timed sections together; a thread that
    fails aborts it so that the others do not wait.
    """
    barrier = threading.Barrier(len(devices), timeout=BARRIER_TIMEOUT_S)
    results: dict[int, T | BaseException] = {}

    def target(gpu: int, device: torch.device) -> None:
        try:
            if device.type == "cuda":
                torch.cuda.set_device(device)
            results[gpu] = work(gpu, device, barrier)
        except BaseException as exc:
            barrier.abort()
            results[gpu] = exc

    threads = [
        threading.Thread(target=target, args=(g, d), name=f"seatrial-gpu{g}") for g, d in devices.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
