"""One-line human summaries of a trial's evidence, shared by the console table and the HTML section."""

from __future__ import annotations

from typing import Any

from seatrial.hw.models import TrialResult


def summarize(trial: TrialResult) -> str:
    """The key figures of ``trial.evidence`` in one line ('' when there are none)."""
    ev = trial.evidence
    if trial.name.startswith("precision.") and ev.get("tflops") is not None:
        peak = ev.get("tflops_peak")
        of_peak = f" = {ev['peak_fraction']:.0%} of {peak}" if peak else " (no datasheet peak)"
        return f"{ev['tflops']} TFLOP/s{of_peak}; kernels: {', '.join(_short(k) for k in ev['kernels'])}"
    if trial.name == "burn" and "tflops" in ev:
        return _burn(ev)
    if trial.name == "collectives" and ev.get("busbw_gbps"):
        peaks = {op: max(v.values()) for op, v in ev["busbw_gbps"].items()}
        return "max busbw " + ", ".join(f"{op} {bw:.1f} GB/s" for op, bw in peaks.items())
    if trial.name == "inventory" and "count" in ev:
        return (
            f"{ev['count']} GPU(s), driver {ev.get('driver_version')}, CUDA {ev.get('cuda_driver_version')}"
        )
    return ""


def _burn(ev: dict[str, Any]) -> str:
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


def _short(kernel: str, limit: int = 60) -> str:
    return kernel if len(kernel) <= limit else kernel[: limit - 3] + "..."
