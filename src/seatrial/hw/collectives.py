"""``collectives``: all-reduce, all-gather, reduce-scatter and all-to-all through torch.distributed, one
process per GPU (NCCL), or per CPU process (gloo, for tests), with nccl-tests' bandwidth formulas
(seatrial.hw.collective_ops).

For a message of S bytes taking t seconds (the slowest rank's mean): algbw = S / t and busbw = algbw times
the op's bus factor. Bandwidths are in GB/s (1e9 bytes). Every op and size runs on groups of 2, 4, 8, ...
of the ranks and on all of them (:func:`group_sizes`; a group of k is ranks 0..k-1), the TP2/TP4/TP8 of
seed 004: a slow link shows as the group size where busbw falls. Each row names its group's size (``ranks``).
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

from seatrial.childenv import SAFE_NCCL_ENV
from seatrial.hw.collective_ops import OPS, bus_factor, prepare

RESULT_TIMEOUT_S = 900.0


def group_sizes(world: int) -> list[int]:
    """2, 4, 8, ... below ``world``, then ``world`` itself (8 -> [2, 4, 8]; 6 -> [2, 4, 6])."""
    sizes, k = [], 2
    while k < world:
        sizes.append(k)
        k *= 2
    return [*sizes, world]


def message_sizes(min_bytes: int, max_bytes: int) -> list[int]:
    """Powers of two from min_bytes to max_bytes inclusive (1 MB .. 1 GB by default)."""
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    return sizes


def _iterations(size_bytes: int) -> int:
    return 20 if size_bytes <= 64 << 20 else 5


def measure_op(op: str, size_bytes: int, device: torch.device, group: Any, n: int, rank: int) -> dict[str, Any]:
    """One op at one size on a group of ``n`` ranks: checked once, then timed (the slowest rank's mean)."""
    count = size_bytes // 4 // n * n  # float32 elements, divisible by the group's size
    ops = prepare(op, count, device, n, rank, group)
    ops.run()
    correct = ops.check()
    iters = _iterations(size_bytes)
    dist.barrier(group=group)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter_ns()
    for _ in range(iters):
        ops.run()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    stats = torch.tensor([(time.perf_counter_ns() - t0) / 1e9 / iters, -float(correct)], device=device)
    dist.all_reduce(stats, op=dist.ReduceOp.MAX, group=group)  # slowest rank's time; any rank's failure
    time_s, all_correct = float(stats[0]), float(stats[1]) < 0
    message_bytes = count * 4
    algbw = message_bytes / time_s / 1e9
    return {
        "op": op,
        "ranks": n,
        "size_bytes": message_bytes,
        "time_us": round(time_s * 1e6, 2),
        "algbw_gbps": float(f"{algbw:.4g}"),
        "busbw_gbps": float(f"{algbw * bus_factor(op, n):.4g}"),
        "correct": all_correct,
        "iterations": iters,
    }


def _measure_groups(sizes: list[int], device: torch.device, world: int, rank: int) -> list[dict[str, Any]]:
    """Every op at every size on each group of :func:`group_sizes` (every rank creates every group, as
    torch.distributed requires; the ranks outside one wait at the barrier)."""
    rows: list[dict[str, Any]] = []
    for k in group_sizes(world):
        group = None if k == world else dist.new_group(list(range(k)))
        if rank < k:
            rows += [measure_op(op, size, device, group, k, rank) for size in sizes for op in OPS]
        dist.barrier()
    return rows


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
    for name in ("all_gather_into_tensor", "reduce_scatter_tensor"):  # deprecated here, older torch's only
        warnings.filterwarnings("ignore", message=f".*{name}.*", category=FutureWarning)
    device = torch.device("cuda", cuda_ids[rank]) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    store = dist.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=RESULT_TIMEOUT_S))
    dist.init_process_group(
        backend, store=store, rank=rank, world_size=world, device_id=device if device.type == "cuda" else None
    )
    try:
        rows = _measure_groups(sizes, device, world, rank)
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
    """Spawn ``world`` processes and measure every op at every size on every group; returns rank 0's rows.

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
