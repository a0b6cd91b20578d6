"""``storage.read`` / ``storage.write`` (fio on the filesystem of ``--path``, inside the run's scratch
folder): sequential 1 MiB O_DIRECT with ``jobs`` jobs, and for reads 4 KiB random read IOPS with its p99
latency; ``storage.load``: every safetensors shard of ``--checkpoint`` read end to end, one after another as an
engine loads them, O_DIRECT (the page cache bypassed), fio in ``--readonly`` mode (it refuses to write)."""

from __future__ import annotations

from typing import Any

from seatrial.io.context import IoContext
from seatrial.io.fio import FioError, direction, have_fio, run_fio
from seatrial.io.judge import Limit, judge, unavailable
from seatrial.io.nodes import Node
from seatrial.io.spread import medians
from seatrial.runs.summaries.io import IoRow

SEQ_DEPTH, RAND_DEPTH = 16, 32


def _common(ctx: IoContext, node: Node, name: str) -> list[str]:
    c = ctx.cfg
    return [f"--name={name}", f"--directory={ctx.scratch[node.spec]}", f"--filename_format={name}.$jobnum",
            "--direct=1", "--ioengine=libaio", f"--numjobs={c.jobs}", f"--size={c.size_mib}m", "--time_based",
            f"--runtime={c.runtime_s:g}", "--group_reporting", "--percentile_list=50:95:99"]  # fmt: skip


def _read_once(ctx: IoContext, node: Node) -> dict[str, Any]:
    seq = direction(run_fio(node, [*_common(ctx, node, "data"), "--rw=read", "--bs=1m", f"--iodepth={SEQ_DEPTH}"],
                            ctx.fio_timeout_s())[0], "read")  # fmt: skip
    rand = direction(run_fio(node, [*_common(ctx, node, "data"), "--rw=randread", "--bs=4k", f"--iodepth={RAND_DEPTH}"],
                             ctx.fio_timeout_s())[0], "read")  # fmt: skip
    return {"seq_read_gbps": seq["gbps"], "rand_read_iops": rand["iops"], "rand_read_p99_ms": rand["p99_ms"]}


def _write_once(ctx: IoContext, node: Node) -> dict[str, Any]:
    args = [*_common(ctx, node, "wdata"), "--rw=write", "--bs=1m", f"--iodepth={SEQ_DEPTH}", "--end_fsync=1"]
    seq = direction(run_fio(node, args, ctx.fio_timeout_s())[0], "write")
    return {"seq_write_gbps": seq["gbps"], "seq_write_p99_ms": seq["p99_ms"]}


def read_trial(ctx: IoContext, node: Node) -> IoRow:
    return _measure(ctx, node, "storage.read", _read_once, "seq_read_gbps", "sequential read 1 MiB",
                    ctx.cfg.expect.storage_read_gbps, "--expect storage.read.gbps")  # fmt: skip


def write_trial(ctx: IoContext, node: Node) -> IoRow:
    return _measure(ctx, node, "storage.write", _write_once, "seq_write_gbps", "sequential write 1 MiB",
                    ctx.cfg.expect.storage_write_gbps, "--expect storage.write.gbps")  # fmt: skip


def _measure(ctx: IoContext, node: Node, trial: str, once: Any, key: str, label: str, floor: float | None,
             source: str) -> IoRow:  # fmt: skip
    if why := have_fio(node):
        return unavailable(node.spec, trial, why)
    runs = []
    try:
        for _ in range(ctx.cfg.repeats):
            runs.append(once(ctx, node))
    except FioError as exc:
        return unavailable(node.spec, trial, f"fio could not measure in {ctx.scratch[node.spec]}: {exc}")
    figures = medians(runs, list(runs[0]))
    figures |= {"jobs": ctx.cfg.jobs, "runtime_s": ctx.cfg.runtime_s, "file_mib": ctx.cfg.size_mib,
                "path": ctx.scratch[node.spec]}  # fmt: skip
    lim = Limit(label, figures[key], floor, "GB/s", True, source)
    return judge(node.spec, trial, runs, figures, [lim], key, ctx.cfg.max_cv)


def shards(node: Node, checkpoint: str) -> list[tuple[int, str]]:
    """(bytes, path) of every ``*.safetensors`` file directly in the checkpoint folder, largest first."""
    done = node.run(
        [
            "find",
            checkpoint,
            "-maxdepth",
            "1",
            "-name",
            "*.safetensors",
            "-type",
            "f",
            "-printf",
            "%s\\t%p\\n",
        ]
    )
    out = []
    for line in done.stdout.decode(errors="replace").splitlines():
        size, _, path = line.partition("\t")
        if path:
            out.append((int(size), path))
    return sorted(out, reverse=True)


def _load_once(node: Node, files: list[tuple[int, str]], timeout_s: float) -> dict[str, Any]:
    args = ["--direct=1", "--readonly", "--rw=read", "--bs=1m", "--ioengine=libaio", f"--iodepth={SEQ_DEPTH}"]
    for i, (_, path) in enumerate(files):
        args += [f"--name=shard{i}", "--filename=" + path.replace(":", "\\:"), "--stonewall"]
    jobs = run_fio(node, args, timeout_s)
    parts = [direction(j, "read") for j in jobs]
    read, secs = sum(p["bytes"] for p in parts), sum(p["runtime_s"] for p in parts)
    return {"load_gbps": round(read / secs / 1e9, 4) if secs else None, "bytes_read": read, "seconds": secs}


def load_trial(ctx: IoContext, node: Node) -> IoRow:
    cfg = ctx.cfg
    if not cfg.checkpoint:
        return unavailable(node.spec, "storage.load", "no checkpoint to load: give --checkpoint DIR")
    if why := have_fio(node):
        return unavailable(node.spec, "storage.load", why)
    files = shards(node, cfg.checkpoint)
    if not files:
        return unavailable(
            node.spec, "storage.load", f"no *.safetensors shard in {cfg.checkpoint} on {node.spec}"
        )
    total = sum(s for s, _ in files)
    timeout = 300 + total / 20e6  # even at 20 MB/s
    try:
        runs = [_load_once(node, files, timeout) for _ in range(cfg.repeats)]
    except FioError as exc:
        return unavailable(node.spec, "storage.load", f"fio could not read the shards: {exc}")
    figures = medians(runs, ["load_gbps", "seconds"])
    gbps = figures["load_gbps"]
    figures |= {"shards": len(files), "checkpoint_bytes": total, "bytes_read": runs[0]["bytes_read"],
                "predicted_load_s": round(total / gbps / 1e9, 4) if gbps else None}  # fmt: skip
    read = ctx.earlier(node.spec, "storage.read")
    if read and read.figures.get("seq_read_gbps") and gbps:
        figures["share_of_storage_read"] = round(gbps / read.figures["seq_read_gbps"], 3)
    limits = [Limit("checkpoint read", gbps, cfg.expect.storage_load_gbps, "GB/s", True, "--expect storage.load.gbps"),
              Limit("predicted load time", figures["predicted_load_s"], cfg.expect.storage_load_s, "s", False,
                    "--expect storage.load.s")]  # fmt: skip
    return judge(node.spec, "storage.load", runs, figures, limits, "load_gbps", cfg.max_cv)
