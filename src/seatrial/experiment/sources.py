"""What a run folder measured, per workload and level, in the form the statistics take: for each start,
the level's summary and its requests' values by metric. Read from ``bench``, ``accept`` and
``experiment`` run folders (an experiment gives one run per setting, with its starts)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seatrial.errors import ConfigError
from seatrial.jsonio import read_json
from seatrial.runs import read_jsonl

REQUEST_METRICS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "per_user_output_tok_s")
#: What makes two workloads the same measurement (a difference in any refuses a comparison).
WORKLOAD_KEYS = ("name", "input_len", "output_len", "ignore_eos", "endpoint", "prefix_len", "num_prefixes",
                 "long_share", "long_input_len", "file")  # fmt: skip


def _level_id(row: dict[str, Any]) -> str:
    rid = str(row.get("request_id", ""))
    return rid.split("-", 1)[0]


def level_values(folder: Path, index: int | None, concurrency: int) -> dict[str, list[float]]:
    """The measured, successful requests of one level (``L<index>-*``, or by concurrency for folders
    written before levels had an index), by metric."""
    out: dict[str, list[float]] = {m: [] for m in REQUEST_METRICS}
    path = folder / "requests.jsonl"
    for r in read_jsonl(path) if path.exists() else []:
        if r.get("phase") != "measure" or r.get("error") is not None:
            continue
        if index is not None and _level_id(r) != f"L{index}":
            continue
        if index is None and r.get("concurrency") != concurrency:
            continue
        for key in ("ttft_ms", "tpot_ms", "e2e_ms"):
            if r.get(key) is not None:
                out[key].append(float(r[key]))
        out["itl_ms"] += [float(x) for x in r.get("itl_ms") or []]
        if r.get("e2e_ms") and r.get("output_tokens"):
            out["per_user_output_tok_s"].append(r["output_tokens"] / (r["e2e_ms"] / 1000))
    return out


@dataclass
class Run:
    """One comparable run: a bench folder, an accept folder's levels, or one experiment setting."""

    label: str
    kind: str
    path: Path
    workloads: dict[str, dict[str, Any]] = field(default_factory=dict)  # workload key -> its fields
    # (workload key, level label) -> per start: the level summary plus "values" (requests by metric)
    levels: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)


def workload_key(w: dict[str, Any]) -> str:
    return f"{w['name']} {w.get('input_len')}/{w.get('output_len')}"


def _label(level: dict[str, Any]) -> str:
    return f"C={level['concurrency']}" if level.get("rate") is None else f"{level['rate']:g}/s"


def _add(run: Run, workload: dict[str, Any], level: dict[str, Any], folder: Path) -> None:
    key = workload_key(workload)
    run.workloads[key] = workload
    if not level.get("valid", True):
        return
    values = level_values(folder, level.get("index"), level["concurrency"])
    run.levels.setdefault((key, _label(level)), []).append({**level, "values": values})


def _bench_workload(config: dict[str, Any]) -> dict[str, Any]:
    w = dict(config.get("workload") or {})
    w["endpoint"] = (config.get("target") or {}).get("endpoint", "completions")
    return {k: w.get(k) for k in WORKLOAD_KEYS}


def _bench(path: Path, label: str, run_info: dict[str, Any], summary: dict[str, Any]) -> list[Run]:
    run = Run(label, "bench", path)
    for level in summary.get("levels", []):
        _add(run, _bench_workload(run_info.get("config") or {}), level, path)
    return [run]


def _experiment(path: Path, label: str, run_info: dict[str, Any], summary: dict[str, Any]) -> list[Run]:
    plan = (run_info.get("config") or {}).get("plan") or {}
    w = plan.get("workload") or {}
    workload = {**{k: w.get(k) for k in WORKLOAD_KEYS}, "name": w.get("workload")}
    runs = []
    for s in summary.get("settings", []):
        run = Run(f"{label}/{s['name']}", "experiment", path)
        for st in s["starts"]:
            for level in st.get("levels", []):
                _add(run, workload, level, path / st["folder"])
        runs.append(run)
    return runs


def _accept(path: Path, label: str, run_info: dict[str, Any], summary: dict[str, Any]) -> list[Run]:
    """The accept levels that are bench levels of a fixed random workload: basic (C=1), context (short,
    long) and the saturation steps."""
    profile = (run_info.get("config") or {}).get("profile") or {}
    trials = profile.get("trials") or {}
    run = Run(label, "accept", path)
    for t in summary.get("trials", []):
        ev = t.get("evidence") or {}
        cfg = trials.get(t["name"]) or {}
        if t["name"] == "basic" and ev.get("level"):
            _add(run, _random(cfg["input_len"], cfg["output_len"]), ev["level"], path)
        elif t["name"] == "context":
            for part in ("short", "long"):
                if isinstance(ev.get(part), dict) and ev[part].get("level"):
                    _add(run, _random(ev[part]["input_len"], cfg["output_len"]), ev[part]["level"], path)
        elif t["name"] == "saturation":
            for step in ev.get("steps", []):
                level = {**step, "valid": step.get("delivered", True) and not step.get("invalid_reasons")}
                _add(run, _random(cfg["input_len"], cfg["output_len"]), level, path)
    return [run]


def _random(input_len: int, output_len: int) -> dict[str, Any]:
    return {"name": "random", "input_len": input_len, "output_len": output_len, "ignore_eos": True,
            "endpoint": "completions", "prefix_len": None, "num_prefixes": None, "long_share": None,
            "long_input_len": None, "file": None}  # fmt: skip


READERS = {"bench": _bench, "experiment": _experiment, "accept": _accept}


def load_runs(path: Path, label: str | None = None) -> list[Run]:
    """The comparable runs of one run folder; a ConfigError when it is not one seatrial can compare."""
    if not (path / "summary.json").is_file() or not (path / "run.json").is_file():
        raise ConfigError(f"{path}: not a seatrial run folder (no run.json and summary.json)")
    run_info, summary = read_json(path / "run.json"), read_json(path / "summary.json")
    command = run_info.get("command")
    if command not in READERS:
        raise ConfigError(
            f"{path}: a `{command}` run folder; compare takes bench, accept or experiment folders"
        )
    return READERS[command](path, label or path.name, run_info, summary)
