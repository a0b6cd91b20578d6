"""``net.nccl``: all-reduce and all-gather across the nodes of a Ray cluster (``--ray ADDRESS``), one rank per GPU
on every node that has GPUs (``--nccl-backend nccl``), or one CPU rank per node with gloo (``--nccl-backend
gloo``: the same code path where no node has a GPU). Every rank is a Ray actor pinned to its node
(:class:`seatrial.io.nccl_rank.NcclRank`); rank 0 holds the rendezvous. Sizes are powers of two from 1 MiB to
``--nccl-max-mib``; each op and size is checked (a wrong result on any rank FAILs) and timed ``repeats`` times.

The figure judged is the all-reduce's bus bandwidth at the largest size (nccl-tests' busbw): its median over the
repeats against ``--expect net.nccl.busbw_gbps`` (PASS at ``net.min_share`` of it), its spread as every io
trial's. On one node (or one node with GPUs) it is UNAVAILABLE: that node's collectives are hw's."""

from __future__ import annotations

import statistics
import time
from typing import Any

from seatrial.errors import ConfigError, ServerError
from seatrial.io.context import IoContext
from seatrial.io.judge import Limit, judge, unavailable
from seatrial.io.nccl_rank import OPS, NcclRank  # its methods import torch, on the node
from seatrial.io.nodes import Node
from seatrial.runs.summaries.io import IoRow
from seatrial.runs.verdicts import Verdict

SINGLE_NODE = "single node: see hw collectives (seatrial hw --trials collectives)"


def rank_nodes(alive: list[dict[str, Any]], backend: str) -> tuple[list[dict[str, Any]], str | None]:
    """One entry per rank (a node once per GPU with nccl, once with gloo), or [] and why there can be none."""
    if backend == "gloo":
        ranks = list(alive)
    else:
        ranks = [n for n in alive for _ in range(int(n["Resources"].get("GPU", 0)))]
        if not ranks:
            return [], (f"no GPU on any of the cluster's {len(alive)} alive nodes: NCCL needs one GPU per rank "
                        "(--nccl-backend gloo runs the same measurement on CPU)")  # fmt: skip
    if len({n["NodeID"] for n in ranks}) < 2:
        return [], SINGLE_NODE
    return ranks, None


def message_sizes(max_mib: int) -> list[int]:
    """1 MiB, 2 MiB, ... up to ``max_mib`` MiB."""
    sizes, size = [], 1 << 20
    while size <= max_mib << 20:
        sizes.append(size)
        size *= 2
    return sizes


def run_ranks(address: str, ranks: list[dict[str, Any]], backend: str, sizes: list[int], repeats: int,
              timeout_s: float) -> list[dict[str, Any]]:  # fmt: skip
    """Rank 0's rows: one actor per rank pinned to its node, rank 0's store, then all of them measure. Raises
    ServerError when the ranks do not report within ``timeout_s`` (their actors are killed either way)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from seatrial.raycluster import connect_ray

    ray = connect_ray(address)
    cls = ray.remote(NcclRank)
    gpus = 1 if backend == "nccl" else 0
    actors = [cls.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False), num_cpus=0,
                          num_gpus=gpus, max_restarts=0).remote(n["NodeManagerAddress"]) for n in ranks]  # fmt: skip
    try:
        host = ranks[0]["NodeManagerAddress"]
        port = ray.get(actors[0].open_store.remote(), timeout=timeout_s)
        refs = [a.measure.remote(r, len(ranks), (host, port), backend, sizes, repeats) for r, a in enumerate(actors)]
        return _rank0(ray, refs, timeout_s)
    finally:
        for actor in actors:
            ray.kill(actor)


def _rank0(ray: Any, refs: list[Any], timeout_s: float) -> list[dict[str, Any]]:
    """Rank 0's rows once every rank returned; ServerError as soon as one fails (the others would wait in
    their collectives for ever) or when they are not done within ``timeout_s``."""
    deadline, pending, rows = time.monotonic() + timeout_s, list(refs), None
    while pending:
        ready, pending = ray.wait(pending, num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
        if not ready:
            raise ServerError(f"{len(pending)} of {len(refs)} ranks did not finish within {timeout_s:.0f} s")
        try:
            got = ray.get(ready[0], timeout=0)
        except Exception as exc:  # its node went away, the process group broke: the row says so
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ServerError(f"rank {refs.index(ready[0])} failed: {first}") from None
        rows = got if ready[0] == refs[0] else rows
    return list(rows or [])


def _figures(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per repeat: the all-reduce busbw at the largest size; per op and size: the median busbw over repeats."""
    largest = max(r["size_bytes"] for r in rows)
    runs = [{"repeat": r["repeat"], "allreduce_busbw_gbps": r["busbw_gbps"], "time_us": r["time_us"]}
            for r in rows if r["op"] == "all_reduce" and r["size_bytes"] == largest]  # fmt: skip
    table = []
    for op in OPS:
        for size in sorted({r["size_bytes"] for r in rows if r["op"] == op}):
            at = [r for r in rows if r["op"] == op and r["size_bytes"] == size]
            table.append({"op": op, "size_bytes": size, "busbw_gbps": statistics.median(r["busbw_gbps"] for r in at),
                          "algbw_gbps": statistics.median(r["algbw_gbps"] for r in at),
                          "correct": all(r["correct"] for r in at)})  # fmt: skip
    return runs, {"largest_bytes": largest, "sizes": table}


def nccl_trial(ctx: IoContext, nodes: list[Node]) -> list[IoRow]:
    cfg = ctx.cfg
    if cfg.ray is None:
        where = " <-> ".join(n.spec for n in nodes) or "local"
        why = SINGLE_NODE if len(nodes) < 2 else "net.nccl runs across a Ray cluster: give --ray ADDRESS"
        return [unavailable(where, "net.nccl", why)]
    where = f"ray {cfg.ray}"
    from seatrial.raycluster import alive_nodes

    try:
        ranks, none = rank_nodes(alive_nodes(cfg.ray), cfg.nccl_backend)
        if none:
            return [unavailable(where, "net.nccl", none)]
        sizes = message_sizes(cfg.nccl_max_mib)
        rows = run_ranks(cfg.ray, ranks, cfg.nccl_backend, sizes, cfg.repeats, cfg.nccl_timeout_s)
    except (ConfigError, ServerError) as exc:
        return [unavailable(where, "net.nccl", str(exc))]
    return [judge_rows(ctx, where, ranks, rows)]


def judge_rows(ctx: IoContext, where: str, ranks: list[dict[str, Any]], rows: list[dict[str, Any]]) -> IoRow:
    """FAIL on any wrong result; else the largest all-reduce's median busbw against the stated floor."""
    cfg, expect = ctx.cfg, ctx.cfg.expect
    runs, figures = _figures(rows)
    nodes = len({n["NodeID"] for n in ranks})
    figures |= {"backend": cfg.nccl_backend, "ranks": len(ranks), "nodes": nodes,
                "allreduce_busbw_gbps": statistics.median(r["allreduce_busbw_gbps"] for r in runs)}  # fmt: skip
    wrong = [f"{s['op']} at {s['size_bytes'] >> 20} MiB" for s in figures["sizes"] if not s["correct"]]
    if wrong:
        return IoRow(node=where, trial="net.nccl", verdict=Verdict.FAIL, figures=figures, runs=runs,
                     reason=f"wrong results across {len(ranks)} ranks: {', '.join(wrong)}")  # fmt: skip
    floor = expect.net_nccl_busbw_gbps
    lim = Limit(f"all-reduce {figures['largest_bytes'] >> 20} MiB busbw over {len(ranks)} ranks on {nodes} nodes",
                figures["allreduce_busbw_gbps"], None if floor is None else round(expect.net_min_share * floor, 4),
                "GB/s", True, f"{expect.net_min_share:.0%} of --expect net.nccl.busbw_gbps={floor:g}" if floor
                else "--expect net.nccl.busbw_gbps")  # fmt: skip
    return judge(where, "net.nccl", runs, figures, [lim], "allreduce_busbw_gbps", cfg.max_cv)
