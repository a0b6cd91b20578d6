"""``seatrial capacity --serve CMD --starts N``: the capacity search on N fresh starts of the server, and the
capacity a fresh replica holds over them (capacity.replica). Each start gets a free port (``{port}`` in the
command), its own folder ``start-K/`` (server.log and the search's run folder) and its own arrival seed
(``--seed``, else a new draw, + 1000 x (K - 1): load.config.start_seed; recorded); it is stopped after its search, whatever happened."""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path
from typing import Any

from seatrial.capacity.config import CapacityConfig
from seatrial.capacity.replica import StartCapacity, replica_bound
from seatrial.capacity.run import Log, run_capacity
from seatrial.errors import EngineError, SeatrialError
from seatrial.load.config import BenchConfig, start_seed
from seatrial.load.level import Progress
from seatrial.load.settings import BenchSettings
from seatrial.runs.capacity import capacity_line
from seatrial.runs.folder import RunFolder
from seatrial.runs.summaries.capacity import CapacitySummary, ReplicaCapacity, StartSearch
from seatrial.server.process import free_port
from seatrial.server.serve import Serve


def starts_config(serve: Serve, starts: int, bench: BenchSettings, ccfg: CapacityConfig) -> dict[str, Any]:
    """run.json's config of a search over fresh starts: the serve block without env values (their names only)."""
    return {"serve": serve.model_dump(mode="json", exclude={"env"}), "serve_env": sorted(serve.env), "starts": starts,
            "bench": bench.model_dump(mode="json"), "capacity": ccfg.model_dump(mode="json")}  # fmt: skip


def run_starts(
    bench: BenchSettings, ccfg: CapacityConfig, serve: Serve, starts: int, out: Path | None, log: Log,
    progress: Progress,
) -> ReplicaCapacity:  # fmt: skip
    """Every start's search, then the replica's capacity over them."""
    base = bench.seed if bench.seed is not None else secrets.randbelow(2**31)  # a new draw each run
    done = [_one_start(bench, ccfg, serve, k, start_seed(base, k), out, log, progress) for k in range(starts)]
    bound = replica_bound(
        [StartCapacity(s.capacity, s.lowest or 0.0) for s in done if s.error is None], ccfg.confidence
    )
    errors = [s for s in done if s.error is not None]
    return ReplicaCapacity(
        unit="req/s" if ccfg.mode == "rate" else "users",
        starts=done,
        capacity=bound.value if not errors else None,
        below=bound.below,
        confidence=ccfg.confidence,
        method=bound.method if not errors else f"{len(errors)} of {starts} starts were not measured",
        label="one start" if starts == 1 else f"{starts} fresh starts",
    )


def _one_start(
    bench: BenchSettings, ccfg: CapacityConfig, serve: Serve, k: int, seed: int, out: Path | None, log: Log,
    progress: Progress,
) -> StartSearch:  # fmt: skip
    folder = out / f"start-{k + 1}" if out else None
    port = free_port()
    argv = serve.argv([], port, out / "guard-history.jsonl" if out else None)
    record = StartSearch(start=k + 1, seed=seed, folder=f"start-{k + 1}" if out else None)
    log(f"start {k + 1}: launching the server on port {port}")
    log_path = folder / "server.log" if folder else Path("/dev/null")
    if folder:
        folder.mkdir(parents=True, exist_ok=True)
    try:
        server = serve.start(argv, log_path, port, {})
    except EngineError as exc:
        return record.model_copy(update={"error": str(exc).splitlines()[0]})
    try:
        record.startup_s = round(server.ready_s or 0.0, 2)
        cfg = BenchConfig.from_settings(bench, server.url, seed=seed)
        config = {"bench": cfg.model_dump(mode="json"), "capacity": ccfg.model_dump(mode="json"), "start": k + 1}
        run_folder = RunFolder(folder, "capacity", config) if folder else None
        try:
            summary = asyncio.run(run_capacity(cfg, ccfg, run_folder, log, progress))
        finally:
            if run_folder:
                run_folder.close()
    except SeatrialError as exc:
        return record.model_copy(update={"error": str(exc).splitlines()[0]})
    finally:
        server.stop(serve.stop_grace_s)
    if folder:
        from seatrial.report.html import write_report

        write_report(folder)
    return _searched(record, summary)


def _searched(record: StartSearch, s: CapacitySummary) -> StartSearch:
    held = s.held()
    update: dict[str, Any] = {
        "capacity": float(held) if held is not None else None,
        "lowest": min((p.load for p in s.probes), default=None),
        "line": capacity_line(s),
        "error": None,
    }
    if not any(p.valid for p in s.probes):
        update["error"] = "nothing was measured: no probe was valid"
    elif any(p.verdict == "INVALID" for p in s.probes):
        update["error"] = f"a probe was INVALID: {s.capacity.stop_reason}"
    return record.model_copy(update=update)
