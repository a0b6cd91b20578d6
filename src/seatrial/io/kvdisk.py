"""``kv.disk``: the node's disk as a KV-cache tier. Files of one KV chunk each (``kv_chunk_bytes``, rounded up
to 4 KiB for O_DIRECT) are written, then read, by C concurrent writers/readers (fio: ``numjobs`` C, one
synchronous O_DIRECT I/O of the whole chunk per file, so each I/O's latency is one chunk's), for every C in
``kv_concurrency``: p50/p95/p99 latency and GB/s per direction. The limits are MLPerf Storage's KV-cache
defaults (write p95 < 500 ms, read p95 < 200 ms) unless ``--expect kv.disk.*`` says otherwise; every level
is judged."""

from __future__ import annotations

import math
from typing import Any

from seatrial.io.context import IoContext
from seatrial.io.fio import FioError, direction, have_fio, run_fio
from seatrial.io.judge import Limit, judge, unavailable
from seatrial.io.nodes import Node
from seatrial.io.spread import medians
from seatrial.runs.summaries.io import IoRow

ALIGN = 4096
MLPERF = "MLPerf Storage KV-cache default"


def chunk_bytes(requested: int) -> int:
    return ALIGN * math.ceil(requested / ALIGN)


def _level(ctx: IoContext, node: Node, folder: str, concurrency: int) -> dict[str, Any]:
    chunk = chunk_bytes(ctx.cfg.kv_chunk_bytes)
    per_job = math.ceil(ctx.cfg.kv_chunks / concurrency)
    common = ["--name=kv", f"--directory={folder}", "--filename_format=kv.$jobnum.$filenum", f"--bs={chunk}",
              f"--filesize={chunk}", f"--nrfiles={per_job}", "--file_service_type=sequential", "--direct=1",
              "--ioengine=psync", f"--numjobs={concurrency}", "--group_reporting", "--percentile_list=50:95:99"]  # fmt: skip
    timeout = ctx.fio_timeout_s() + ctx.cfg.kv_chunks * chunk / 10e6
    out: dict[str, Any] = {"concurrency": concurrency}
    node.run(["mkdir", "-p", "--", folder])
    for rw in ("write", "read"):
        got = direction(run_fio(node, [*common, f"--rw={rw}"], timeout)[0], rw)
        out |= {f"{rw}_{k}": got[k] for k in ("gbps", "p50_ms", "p95_ms", "p99_ms")}
    node.run(["rm", "-rf", "--", folder])
    return out


def _once(ctx: IoContext, node: Node) -> dict[str, Any]:
    levels = [_level(ctx, node, f"{ctx.scratch[node.spec]}/kv-{c}", c) for c in ctx.cfg.kv_concurrency]
    top = levels[-1]
    return {"levels": levels, "read_gbps": top["read_gbps"], "write_gbps": top["write_gbps"]}


def disk_trial(ctx: IoContext, node: Node) -> IoRow:
    cfg = ctx.cfg
    if why := have_fio(node):
        return unavailable(node.spec, "kv.disk", why)
    try:
        runs = [_once(ctx, node) for _ in range(cfg.repeats)]
    except FioError as exc:
        return unavailable(node.spec, "kv.disk", f"fio could not measure in {ctx.scratch[node.spec]}: {exc}")
    levels = []
    for i, c in enumerate(cfg.kv_concurrency):
        keys = [k for k in runs[0]["levels"][i] if k != "concurrency"]
        levels.append({"concurrency": c, **medians([r["levels"][i] for r in runs], keys)})
    figures: dict[str, Any] = {"chunk_bytes": chunk_bytes(cfg.kv_chunk_bytes), "chunk_source": cfg.kv_chunk_source,
                               "chunks_per_level": cfg.kv_chunks, "levels": levels,
                               **medians(runs, ["read_gbps", "write_gbps"])}  # fmt: skip
    e = cfg.expect
    limits = []
    for lv in levels:
        at = f"at concurrency {lv['concurrency']}"
        limits += [Limit(f"write p95 {at}", lv["write_p95_ms"], e.kv_disk_write_p95_ms, "ms", False, _src("write", e.kv_disk_write_p95_ms)),
                   Limit(f"read p95 {at}", lv["read_p95_ms"], e.kv_disk_read_p95_ms, "ms", False, _src("read", e.kv_disk_read_p95_ms))]  # fmt: skip
    return judge(node.spec, "kv.disk", runs, figures, limits, "read_gbps", cfg.max_cv)


def _src(rw: str, value: float) -> str:
    default = {"write": 500.0, "read": 200.0}[rw]
    return MLPERF if value == default else f"--expect kv.disk.{rw}_p95_ms"
