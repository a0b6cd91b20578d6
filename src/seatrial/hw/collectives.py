"""``collectives``: all-reduce and all-gather through torch.distributed, one process per GPU (NCCL),
or per CPU process (gloo, for tests), with nccl-tests' bandwidth formulas.

For a message of S bytes taking t seconds (the slowest rank's mean): algbw = S / t and
busbw = algbw * 2(n-1)/n for all-reduce, algbw * (n-1)/n for all-gather, where S is the all-gather's
whole output, as nccl-tests counts it. Bandwidths are in GB/s (1e9 bytes).
"""

from __future__ import annotations

import os
import queue
import time
import warnings
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

#: NVLink multicast stays off: on shared hosts it can take the GPUs out of service.
SAFE_NCCL_ENV = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
OPS = ("all_reduce", "all_gather")
RESULT_TIMEOUT_S = 900.0


def bus_factor(op: str, world: int) -> float:
    """nccl-tests' busbw / algbw ratio."""
    return 2 * (world - 1) / world if op == "all_reduce" else (world - 1) / world


def message_sizes(min_bytes: int, max_bytes: int) -> list[int]:
    """Powers of two from min_bytes to max_bytes inclusive (1 MB .. 1 GB by default)."""
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    return sizes


def _iterations(size_bytes: int) -> int:
    return 20 if size_bytes <= 64 << 20 else 5


def _measure(op: str, size_bytes: int, device: torch.device, world: int, rank: int) -> dict[str, Any]:
    count = size_bytes // 4 // world * world  # float32 elements, divisible by the world size
    per_rank = count // world
    if op == "all_reduce":
        buf = torch.full((count,), float(rank + 1), device=device)
        run = lambda: dist.all_reduce(buf)  # noqa: E731
    else:
        buf = torch.full((per_rank,), float(rank + 1), device=device)
        out = torch.empty(count, device=device)
        run = lambda: dist.all_gather_into_tensor(out, buf)  # noqa: E731
    run()
    if op == "all_reduce":
        correct = bool(torch.all(buf == world * (world + 1) / 2))
        buf.fill_(0.0)
    else:
        correct = bool(
            torch.equal(out.view(world, per_rank)[:, 0], torch.arange(1, world + 1, device=device).float())
        )
        correct = correct and bool(torch.all(out.view(world, per_rank) == out.view(world, per_rank)[:, :1]))
    iters = _iterations(size_bytes)
    dist.barrier()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        run()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    stats = torch.tensor([(time.perf_counter_ns() - t0) / 1e9 / iters, -float(correct)], device=device)
    dist.all_reduce(stats, op=dist.ReduceOp.MAX)  # slowest rank's time; any rank's failure
    time_s, all_correct = float(stats[0]), float(stats[1]) < 0
    message_bytes = count * 4
    algbw = message_bytes / time_s / 1e9
    return {
        "op": op,
        "size_bytes": message_bytes,
        "time_us": round(time_s * 1e6, 2),
        "algbw_gbps": float(f"{algbw:.4g}"),
        "busbw_gbps": float(f"{algbw * bus_factor(op, world):.4g}"),
        "correct": all_correct,
        "iterations": iters,
    }


def rendezvous_store() -> dist.TCPStore:
    """The workers' rendezvous (torch.distributed's key-value store), served by this process on a port the
    kernel gives it and held until the run ends. A port chosen, released and bound again by rank 0 seconds
    later (after spawn's imports) could be taken in between by any ``bind(0)`` or outbound connection on the
    host: the workers then failed with EADDRINUSE and reported nothing."""
    return dist.TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=RESULT_TIMEOUT_S), wait_for_workers=False)


def _worker(
    rank: int, world: int, backend: str, port: int, cuda_ids: list[int], sizes: list[int], results: Any
) -> None:
    os.environ.update(SAFE_NCCL_ENV)
    warnings.filterwarnings("ignore", message=".*all_gather_into_tensor.*", category=FutureWarning)
    device = torch.device("cuda", cuda_ids[rank]) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    store = dist.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=RESULT_TIMEOUT_S))
    dist.init_process_group(
        backend, store=store, rank=rank, world_size=world, device_id=device if device.type == "cuda" else None
    )
    try:
        rows = [_measure(op, size, device, world, rank) for size in sizes for op in OPS]
        if rank == 0:
            results.put(rows)
    finally:
        dist.destroy_process_group()


def _wait_rows(results: Any, procs: list[Any]) -> list[dict[str, Any]]:
    """Rank 0's rows, or [] as soon as a worker has died or RESULT_TIMEOUT_S has passed."""
    deadline = time.monotonic() + RESULT_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            return list(results.get(timeout=1.0))
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                return []
    return []


def run_collectives(
    world: int, backend: str, sizes: list[int], cuda_ids: list[int] | None = None
) -> list[dict[str, Any]]:
    """Spawn ``world`` processes and measure every op at every size; returns rank 0's rows.

    Raises RuntimeError with the workers' exit codes when they do not report.
    """
    os.environ.update(SAFE_NCCL_ENV)
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    store = rendezvous_store()  # held by this process until the workers are done
    args = (world, backend, store.port, cuda_ids or [], sizes, results)
    procs = [ctx.Process(target=_worker, args=(r, *args), daemon=True) for r in range(world)]
    for p in procs:
        p.start()
    rows = _wait_rows(results, procs)
    for p in procs:
        p.join(timeout=60)
        if p.is_alive():
            p.kill()
    del store
    if not rows:
        raise RuntimeError(f"collective workers did not report (exit codes {[p.exitcode for p in procs]})")
    return rows
