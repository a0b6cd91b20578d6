"""The four collectives as nccl-tests counts them: their buffers, the call, the check of the result and
the bus-bandwidth factor.

A message of ``count`` float32 elements (divisible by the group's size n, ``per`` = count / n) is what
nccl-tests calls the size: the all-reduce's buffer, the all-gather's whole output, the reduce-scatter's
whole input, the all-to-all's whole send buffer. busbw = algbw * 2(n-1)/n for all-reduce and
algbw * (n-1)/n for the other three. Each buffer's chunks hold values that name where they came from, so
a chunk delivered to the wrong rank or in the wrong place fails the check (small integers: exact in float32).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all")


def bus_factor(op: str, world: int) -> float:
    """nccl-tests' busbw / algbw ratio."""
    if op not in OPS:
        raise ValueError(f"unknown collective {op!r}; known: {', '.join(OPS)}")
    return 2 * (world - 1) / world if op == "all_reduce" else (world - 1) / world


@dataclass
class Prepared:
    """``run`` issues the collective once; ``check`` says whether the first call's result was right (and
    leaves the buffers so that repeating ``run`` stays finite)."""

    run: Callable[[], Any]
    check: Callable[[], bool]


def _chunks(count: int, n: int, device: torch.device, value: Callable[[int], float]) -> torch.Tensor:
    """``count`` elements in n chunks, chunk j filled with value(j) (no temporary of the whole size)."""
    buf = torch.empty(count, device=device)
    for j, chunk in enumerate(buf.view(n, count // n)):
        chunk.fill_(value(j))
    return buf


def _equal_chunks(buf: torch.Tensor, n: int, value: Callable[[int], float]) -> bool:
    expected = torch.tensor([value(j) for j in range(n)], device=buf.device)
    return bool(torch.all(buf.view(n, -1) == expected[:, None]))


def prepare(op: str, count: int, device: torch.device, n: int, rank: int, group: Any) -> Prepared:
    """Buffers for ``op`` on a group of ``n`` ranks (``rank``: this one's rank in the group)."""
    per = count // n
    if op == "all_reduce":  # every rank adds rank+1: n(n+1)/2 everywhere
        buf = torch.full((count,), float(rank + 1), device=device)

        def check_sum() -> bool:
            ok = bool(torch.all(buf == n * (n + 1) / 2))
            buf.zero_()  # repeated sums of zeros cannot overflow
            return ok

        return Prepared(lambda: dist.all_reduce(buf, group=group), check_sum)
    if op == "all_gather":  # chunk i of the output comes from rank i
        mine, out = torch.full((per,), float(rank + 1), device=device), torch.empty(count, device=device)
        return Prepared(
            lambda: dist.all_gather_into_tensor(out, mine, group=group),
            lambda: _equal_chunks(out, n, lambda i: i + 1),
        )
    if op == "reduce_scatter":  # rank r: the sum over ranks k of chunk r, which is (r+1)(k+1) on rank k
        src, got = _chunks(count, n, device, lambda j: (j + 1) * (rank + 1)), torch.empty(per, device=device)
        return Prepared(
            lambda: dist.reduce_scatter_tensor(got, src, group=group),
            lambda: bool(torch.all(got == (rank + 1) * n * (n + 1) / 2)),
        )
    if op == "all_to_all":  # rank r sends chunk j (value r*n + j) to rank j: it receives i*n + r from rank i
        send, recv = _chunks(count, n, device, lambda j: rank * n + j), torch.empty(count, device=device)
        return Prepared(
            lambda: dist.all_to_all_single(recv, send, group=group),
            lambda: _equal_chunks(recv, n, lambda i: i * n + rank),
        )
    raise ValueError(f"unknown collective {op!r}; known: {', '.join(OPS)}")
