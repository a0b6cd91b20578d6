"""The ``seatrial hw`` verdict sheet as text, shared by the console table and the HTML section:
one line of key figures per trial, and the sheet's rows with repeated reasons said once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seatrial.runs.result import TrialResult
from seatrial.runs.table import Table
from seatrial.runs.verdicts import Verdict

SHEET_COLUMNS = ("trial", "gpu", "verdict", "evidence / reason")
BAD = (Verdict.FAIL, Verdict.UNSTABLE, Verdict.REVIEW_REQUIRED, Verdict.INCONCLUSIVE)


def _precision(ev: dict[str, Any]) -> str:
    if ev.get("tflops") is None:
        return ""
    peak = ev.get("tflops_peak")
    of_peak = f" = {ev['peak_fraction']:.0%} of {peak}" if peak else " (no datasheet peak)"
    return f"{ev['tflops']} TFLOP/s{of_peak}; kernels: {', '.join(_short(k) for k in ev['kernels'])}"


def _burn(ev: dict[str, Any]) -> str:
    if "tflops" not in ev:
        return ""
    tel = ev.get("telemetry", {})
    parts = [f"{ev['tflops']} TFLOP/s", f"share {ev['share_of_best']:.0%}", f"{ev['checks']} checks"]
    if tel.get("sm_clock_mhz"):
        parts.append(f"SM {tel['sm_clock_mhz']['min']}-{tel['sm_clock_mhz']['max']} MHz")
    if tel.get("gpu_temp_c"):
        parts.append(f"max {tel['gpu_temp_c']['max']} C")
    if tel.get("power_w") and tel.get("power_limit_w"):
        parts.append(f"max {tel['power_w']['max']:.0f}/{tel['power_limit_w']['max']:.0f} W")
    if tel.get("clock_events_seen"):
        parts.append("events " + ",".join(tel["clock_events_seen"]))
    return "; ".join(parts)


def _collectives(ev: dict[str, Any]) -> str:
    if not ev.get("busbw_gbps"):
        return ""
    peaks = {op: max(v.values()) for op, v in ev["busbw_gbps"].items()}
    line = "max busbw " + ", ".join(f"{op} {bw:.1f} GB/s" for op, bw in peaks.items())
    groups = ev.get("by_group") or {}
    if len(groups) < 2:
        return line
    ops = list(dict.fromkeys(op for per_op in groups.values() for op in per_op))
    by_op = [f"{op} " + "/".join(f"{g[op]['busbw_gbps']:.0f}" if op in g else "-" for g in groups.values())
             for op in ops]  # fmt: skip
    return f"{line}; at the largest size on {'/'.join(groups)} ranks: " + ", ".join(by_op) + " GB/s"


def _inventory(ev: dict[str, Any]) -> str:
    if "count" not in ev:
        return ""
    line = f"{ev['count']} GPU(s), driver {ev.get('driver_version')}, CUDA {ev.get('cuda_driver_version')}"
    topology = ev.get("topology") or {}
    return f"{line}; {topology['summary']}" if topology.get("summary") else line


#: trial (or trial family: ``precision`` for every ``precision.*``) -> its key figures in one line, from its
#: evidence ('' when it has none). A trial without an entry shows its reason only (seatrial.hw.registry).
SUMMARIES: dict[str, Callable[[dict[str, Any]], str]] = {
    "inventory": _inventory,
    "precision": _precision,
    "burn": _burn,
    "collectives": _collectives,
}


def trial_summary(trial: TrialResult) -> str:
    """The key figures of ``trial.evidence`` in one line ('' when there are none), with the trial's wall time
    where it has figures (every selected GPU at once: seatrial.hw.runner)."""
    line = SUMMARIES.get(trial.name) or SUMMARIES.get(trial.name.split(".")[0])
    text = line(trial.evidence) if line else ""
    wall = trial.evidence.get("trial_wall_s")
    return f"{text}; trial {wall:g} s wall" if text and isinstance(wall, int | float) else text


def _short(kernel: str, limit: int = 60) -> str:
    return kernel if len(kernel) <= limit else kernel[: limit - 3] + "..."


def sheet_table(trials: list[TrialResult]) -> Table:
    """One row per trial; trials that share one verdict and one reason and show no figures (every
    trial of a machine without a GPU) are one row naming them all, where the first of them stood."""
    groups: dict[tuple[str, str | None], list[TrialResult]] = {}
    order: list[tuple[str, str | None] | TrialResult] = []
    for t in trials:
        if trial_summary(t) or not t.reason:
            order.append(t)
            continue
        key = (t.verdict.value, t.reason)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(t)
    rows, ok = [], []
    for item in order:
        if isinstance(item, TrialResult):
            detail = " | ".join(x for x in (trial_summary(item), item.reason or "") if x)
            rows.append([item.name, "all" if item.gpu is None else str(item.gpu), item.verdict.value, detail])
            ok.append(item.verdict not in BAD)
            continue
        members = groups[item]
        names = list(dict.fromkeys(t.name for t in members))
        gpus = sorted({t.gpu for t in members if t.gpu is not None})
        label = names[0] if len(members) == 1 else f"{', '.join(names)} ({len(members)} trials)"
        gpu = "all" if not gpus else ",".join(map(str, gpus))
        rows.append([label, gpu, item[0], item[1] or ""])
        ok.append(Verdict(item[0]) not in BAD)
    return Table("seatrial hw", SHEET_COLUMNS, rows, ok)
