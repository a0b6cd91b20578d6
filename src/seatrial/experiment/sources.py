"""What a run folder measured, per workload and level, in the form the statistics take: for each start,
the level's summary and its requests' values by metric. Read from ``bench``, ``accept`` and
``experiment`` run folders (an experiment gives one run per setting, with its starts)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seatrial.errors import ConfigError
from seatrial.load.config import WorkloadConfig
from seatrial.load.metric_table import METRICS, REQUEST_METRICS
from seatrial.runs import read_jsonl
from seatrial.runs.stored import RunInfo, read_run
from seatrial.runs.summaries.accept import AcceptSummary
from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.bench import BenchSummary, LevelSummary
from seatrial.runs.summaries.capacity import CapacitySummary
from seatrial.runs.summaries.experiment import ExperimentSummary

#: What makes two workloads the same measurement: every field of the workload's settings but its seed (a
#: run's prompts are new each run by design), and the endpoint it is sent to. A field added to the settings
#: is a key at once.
WORKLOAD_KEYS = (*(k for k in WorkloadConfig.model_fields if k != "seed"), "endpoint")


def workload_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """What makes two runs' workloads different measurements (empty: the same): a key both runs recorded
    with different values, or the workload's name. A key one run did not record (a folder written before
    the field existed) is not a difference."""
    return [
        f"{k}: {a.get(k)!r} vs {b.get(k)!r}"
        for k in WORKLOAD_KEYS
        if a.get(k) != b.get(k) and (k == "name" or (a.get(k) is not None and b.get(k) is not None))
    ]


def in_level(row: dict[str, Any], index: int) -> bool:
    """Whether a request row is of level ``index``: its ``level``; of a row written before records carried
    their level, its id's ``L<index>-`` prefix."""
    if "level" in row:
        return bool(row["level"] == index)
    return str(row.get("request_id", "")).split("-", 1)[0] == f"L{index}"


def level_values(folder: Path, level: dict[str, Any]) -> dict[str, list[Any]]:
    """The measured, successful requests of one level (a level of a summary: by :func:`in_level`, or by
    concurrency for folders written before levels had an index; within its ``window``), by metric: one
    value per request, and for ``itl_ms`` one list per request (its gaps stay together)."""
    out: dict[str, list[Any]] = {m: [] for m in REQUEST_METRICS}
    index, concurrency = level.get("index"), level["concurrency"]
    start = (level.get("window") or {}).get("start_ms")
    path = folder / "requests.jsonl"
    for r in read_jsonl(path) if path.exists() else []:
        if r.get("phase") != "measure" or r.get("error") is not None:
            continue
        if start is not None and r.get("sent_ms", 0.0) < start:  # the warm-up's transient (load.window)
            continue
        if index is not None and not in_level(r, index):
            continue
        if index is None and r.get("concurrency") != concurrency:
            continue
        for key in REQUEST_METRICS:
            v = METRICS[key].value(r.get)
            if METRICS[key].of == "gap":
                out[key].append([float(x) for x in v])
            elif v is not None:
                out[key].append(float(v))
    return out


def stall_reason(level: dict[str, Any], max_lag_ms: float | None) -> str | None:
    """Why a level's request timings are not the server's: its client's event loop woke later than
    ``max_lag_ms`` at p99 (tokens waited unread); None when it did not, or nothing says."""
    lag = (level.get("client_timing") or {}).get("loop_lag_ms_p99")
    if lag is None or max_lag_ms is None or lag <= max_lag_ms:
        return None
    return f"client stalled: event loop {lag:.0f} ms late at p99 (> max_lag_ms {max_lag_ms:g})"


@dataclass
class Run:
    """One comparable run: a bench folder, an accept folder's levels, or one experiment setting."""

    label: str
    kind: str
    path: Path
    workloads: dict[str, dict[str, Any]] = field(default_factory=dict)  # workload key -> its fields
    # (workload key, level label) -> per start: the level summary plus "values" (requests by metric)
    levels: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    capacity: CapacitySummary | None = None  # a capacity run's summary (its levels are probes, not compared)


def workload_key(w: dict[str, Any]) -> str:
    return f"{w['name']} {w.get('input_len')}/{w.get('output_len')}"


def _label(level: dict[str, Any]) -> str:
    return f"C={level['concurrency']}" if level.get("rate") is None else f"{level['rate']:g}/s"


def _add(
    run: Run, workload: dict[str, Any], level: dict[str, Any], folder: Path, max_lag_ms: float | None = None
) -> None:
    key = workload_key(workload)
    run.workloads[key] = workload
    if not level.get("valid", True):
        return
    values = level_values(folder, level)
    starts = run.levels.setdefault((key, _label(level)), [])
    starts.append(
        {**level, "values": values, "start": len(starts), "stalled": stall_reason(level, max_lag_ms)}
    )


def _bench_workload(config: dict[str, Any]) -> dict[str, Any]:
    w = dict(config.get("workload") or {})
    w["endpoint"] = (config.get("target") or {}).get("endpoint", "completions")
    return {k: w.get(k) for k in WORKLOAD_KEYS}


def _bench(path: Path, label: str, info: RunInfo, summary: BenchSummary) -> list[Run]:
    run = Run(label, "bench", path)
    for level in summary.levels:
        _add(run, _bench_workload(info.config), _as_written(level), path, (info.config.get("load") or {}).get("max_lag_ms"))
    return [run]


def _as_written(level: LevelSummary) -> dict[str, Any]:
    """A level as its folder holds it: a field the folder's version did not write (a level ``index``) stays
    absent, not its default, so :func:`level_values` takes such a folder's requests by concurrency."""
    return level.model_dump(mode="json", exclude_unset=True)


def _experiment(path: Path, label: str, info: RunInfo, summary: ExperimentSummary) -> list[Run]:
    w = (info.config.get("plan") or {}).get("workload") or {}
    workload = {**{k: w.get(k) for k in WORKLOAD_KEYS}, "name": w.get("workload")}
    runs = []
    for s in summary.settings:
        run = Run(f"{label}/{s.name}", "experiment", path)
        for st in s.starts:
            for level in st.levels:
                _add(run, workload, _as_written(level), path / st.folder, w.get("max_lag_ms"))
        runs.append(run)
    return runs


def _accept(path: Path, label: str, info: RunInfo, accepted: AcceptSummary) -> list[Run]:
    """The accept levels that are bench levels of a fixed random workload: basic (C=1), context (short,
    long) and the saturation steps."""
    trials = (info.config.get("profile") or {}).get("trials") or {}
    run = Run(label, "accept", path)
    for t in accepted.trials:
        ev, name = t.evidence, t.name
        cfg = trials.get(name) or {}
        if name == "basic" and ev.get("level"):
            _add(run, _random(cfg["input_len"], cfg["output_len"]), ev["level"], path)
        elif name == "context":
            for part in ("short", "long"):
                if isinstance(ev.get(part), dict) and ev[part].get("level"):
                    _add(run, _random(ev[part]["input_len"], cfg["output_len"]), ev[part]["level"], path)
        elif name == "saturation":
            for step in ev.get("steps", []):
                level = {**step, "valid": step.get("delivered", True) and not step.get("invalid_reasons")}
                _add(run, _random(cfg["input_len"], cfg["output_len"]), level, path)
    return [run]


def _random(input_len: int, output_len: int) -> dict[str, Any]:
    known = {"name": "random", "input_len": input_len, "output_len": output_len, "ignore_eos": True,
             "endpoint": "completions"}  # fmt: skip
    return {k: known.get(k) for k in WORKLOAD_KEYS}


def _capacity(path: Path, label: str, info: RunInfo, summary: CapacitySummary) -> list[Run]:
    """A capacity run: its workload, and its summary (capacity at the SLO, per GPU, cost)."""
    run = Run(label, "capacity", path, capacity=summary)
    workload = _bench_workload(info.config.get("bench") or {})
    run.workloads[workload_key(workload)] = workload
    return [run]


#: summary model -> how compare reads that folder (``capacity --starts N`` writes the replica's: not compared)
READERS: dict[type[SummaryModel], Callable[[Path, str, RunInfo, Any], list[Run]]] = {
    BenchSummary: _bench, ExperimentSummary: _experiment, AcceptSummary: _accept, CapacitySummary: _capacity,
}  # fmt: skip


def load_runs(path: Path, label: str | None = None) -> list[Run]:
    """The comparable runs of one run folder; a ConfigError when it is not one seatrial can compare."""
    if not (path / "summary.json").is_file() or not (path / "run.json").is_file():
        raise ConfigError(f"{path}: not a seatrial run folder (no run.json and summary.json)")
    run = read_run(path)
    reader = READERS.get(type(run.summary))
    if reader is None:
        shape = "a capacity run over fresh starts" if run.info.command == "capacity" else f"a `{run.info.command}` run folder"
        raise ConfigError(f"{path}: {shape}; compare takes bench, accept, experiment or (one-start) capacity folders")
    return reader(path, label or path.name, run.info, run.summary)
