"""A level's GPU samples summarized (seatrial.load.gpu_telemetry): energy from each GPU's counter
(``nvmlDeviceGetTotalEnergyConsumption``, mJ, between the first and the last sample) beside the integral
of its sampled power over the same span (trapezoids), per output token; power per GPU; the share of
samples whose clock-event reasons include a slowdown (:func:`seatrial.hw.telemetry.abnormal_clock_events`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from seatrial.hw.telemetry import abnormal_clock_events
from seatrial.runs.summaries.bench import GpuLevel, GpuTelemetry, PowerSeries, PowerStats

SERIES_POINTS = 300
GIB = 1 << 30


def unavailable(reason: str, source: str, hz: float) -> GpuTelemetry:
    return GpuTelemetry(status="UNAVAILABLE", reason=reason, source=source, hz=hz)


def integral_j(samples: list[dict[str, Any]], key: str) -> float | None:
    """Trapezoid integral of ``key`` (W) over ``t_s``; None with fewer than two readings."""
    pts = [(s["t_s"], s[key]) for s in samples if s.get(key) is not None]
    if len(pts) < 2:
        return None
    t, w = np.array(pts, dtype=np.float64).T
    return float(np.sum((w[1:] + w[:-1]) / 2 * np.diff(t)))


def counter_j(samples: list[dict[str, Any]]) -> float | None:
    """The energy counter's delta (J) between the first and the last sample that read it."""
    readings = [s["energy_mj"] for s in samples if s.get("energy_mj") is not None]
    return (readings[-1] - readings[0]) / 1000.0 if len(readings) >= 2 else None


def _mean(samples: list[dict[str, Any]], key: str) -> float | None:
    values = [s[key] for s in samples if s.get(key) is not None]
    return float(np.mean(values)) if values else None


def _max(samples: list[dict[str, Any]], key: str) -> float | None:
    values = [s[key] for s in samples if s.get(key) is not None]
    return float(max(values)) if values else None


def _throttle(samples: list[dict[str, Any]]) -> tuple[float | None, list[str], int]:
    masks = [int(s["clock_event_reasons"]) for s in samples if s.get("clock_event_reasons") is not None]
    slow = [abnormal_clock_events(m) for m in masks]
    hit = sum(1 for names in slow if names)
    return (hit / len(masks) if masks else None), sorted({n for names in slow for n in names}), hit


def gpu_level(series: dict[str, Any], start_s: float) -> GpuLevel:
    """One GPU's summary; its power series is placed at ``start_s`` (the level's start in the run)."""
    samples = series["samples"]
    share, reasons, _ = _throttle(samples)
    counter, integral = counter_j(samples), integral_j(samples, "power_w")
    step = max(1, -(-len(samples) // SERIES_POINTS))
    used = _max(samples, "memory_used_bytes")
    return GpuLevel(
        node=series["node"], index=series["index"], name=series.get("name"), samples=len(samples),
        span_s=samples[-1]["t_s"] - samples[0]["t_s"] if samples else 0.0,
        energy_j=counter if counter is not None else integral, energy_counter_j=counter,
        power_integral_j=integral, power_instant_integral_j=integral_j(samples, "power_instant_w"),
        power_w=PowerStats(mean=_mean(samples, "power_w"), max=_max(samples, "power_w")),
        sm_clock_mhz_mean=_mean(samples, "sm_clock_mhz"), mem_clock_mhz_mean=_mean(samples, "mem_clock_mhz"),
        utilization_gpu_pct_mean=_mean(samples, "utilization_gpu_pct"),
        memory_used_gib_max=None if used is None else used / GIB, gpu_temp_c_max=_max(samples, "gpu_temp_c"),
        throttle_share=share, throttle_reasons=reasons, unavailable=series.get("unavailable", {}),
        series=PowerSeries(t_s=[round(start_s + s["t_s"], 3) for s in samples[::step]],
                           power_w=[s.get("power_w") for s in samples[::step]]),
    )  # fmt: skip


def summarize(
    series: list[dict[str, Any]], output_tokens: int, hz: float, source: str, start_s: float, window_s: float
) -> GpuTelemetry:
    """The level's telemetry from every GPU's samples; UNAVAILABLE when NVML gave neither power nor energy."""
    gpus = [gpu_level(s, start_s) for s in series]
    everything = [x for s in series for x in s["samples"]]
    base = {"source": source, "hz": hz, "start_s": round(start_s, 3), "window_s": round(window_s, 3), "gpus": gpus}
    if all(g.energy_j is None for g in gpus):
        why = "; ".join(sorted({f"{k}: {v}" for g in gpus for k, v in g.unavailable.items() if "power" in k or
                                "energy" in k})) or "fewer than two samples"  # fmt: skip
        return GpuTelemetry(status="UNAVAILABLE", reason=f"NVML gave neither power nor energy ({why})", **base)
    sources = {"counter" if g.energy_counter_j is not None else "power_integral" for g in gpus if g.energy_j is not None}
    energy = sum(g.energy_j for g in gpus if g.energy_j is not None)
    share, _, _ = _throttle(everything)
    notes = [f"{g.node} GPU {g.index}: no energy reading" for g in gpus if g.energy_j is None]
    return GpuTelemetry(
        status="MEASURED", **base, energy_j=energy, energy_source=sources.pop() if len(sources) == 1 else "mixed",
        joules_per_output_token=energy / output_tokens if output_tokens else None,
        power_w=PowerStats(mean=_mean(everything, "power_w"), max=_max(everything, "power_w")),
        throttle_share=share, notes=notes,
    )  # fmt: skip
