"""Telemetry sampled during load: clocks, temperatures, power against its limit (as NVML averages it, and its
instant reading), the energy counter, utilisation, memory used, clock-event reasons.

Clock-event ("throttle") reasons are NVML's bit mask, decoded bit by bit with :func:`decode_clock_events`.
Power cap, idle, application clocks, sync boost and display clocks are normal states of a loaded GPU;
any slowdown bit (hardware, thermal, power brake) or an unknown bit is not.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from seatrial.hw.nvml import Nvml, Unavailable, read

#: nvmlClocksEventReasons bits (nvml.h), in bit order.
CLOCK_EVENT_BITS: dict[int, str] = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
NORMAL_CLOCK_EVENTS = frozenset(
    {"gpu_idle", "applications_clocks_setting", "sw_power_cap", "sync_boost", "display_clock_setting"}
)
NVML_FI_DEV_MEMORY_TEMP = 82
NVML_FI_DEV_POWER_INSTANT = 186


def decode_clock_events(mask: int) -> list[str]:
    """Names of the bits set in ``mask``; a bit NVML does not document is ``unknown_0x...``."""
    names = [name for bit, name in CLOCK_EVENT_BITS.items() if mask & bit]
    rest = mask & ~sum(CLOCK_EVENT_BITS)
    bit = 1
    while rest:
        if rest & bit:
            names.append(f"unknown_{bit:#x}")
            rest &= ~bit
        bit <<= 1
    return names


def abnormal_clock_events(mask: int) -> list[str]:
    """The decoded reasons that are not normal under load (everything but NORMAL_CLOCK_EVENTS)."""
    return [n for n in decode_clock_events(mask) if n not in NORMAL_CLOCK_EVENTS]


def _field_value(lib: Any, h: Any, field_id: int) -> Any:
    values = read(lib.nvmlDeviceGetFieldValues, h, [field_id])
    if isinstance(values, Unavailable):
        return values
    v = values[0]
    if v.nvmlReturn != 0:
        return Unavailable(reason=f"nvmlDeviceGetFieldValues({field_id}): return code {v.nvmlReturn}")
    attr = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal"}.get(v.valueType, "uiVal")
    return getattr(v.value, attr)


def _reasons_fn(lib: Any) -> Any:
    return (
        getattr(lib, "nvmlDeviceGetCurrentClocksEventReasons", None)
        or lib.nvmlDeviceGetCurrentClocksThrottleReasons
    )


def sample_once(nvml: Nvml, index: int) -> dict[str, Any]:
    """One telemetry sample of one GPU; values NVML cannot give are Unavailable."""
    lib, h = nvml.lib, nvml.handle(index)
    power_mw = read(lib.nvmlDeviceGetPowerUsage, h)
    instant_mw = _field_value(lib, h, NVML_FI_DEV_POWER_INSTANT)
    limit_mw = read(lib.nvmlDeviceGetEnforcedPowerLimit, h)
    util = read(lib.nvmlDeviceGetUtilizationRates, h)
    memory = read(lib.nvmlDeviceGetMemoryInfo, h)
    return {
        "sm_clock_mhz": read(lib.nvmlDeviceGetClockInfo, h, 1),
        "mem_clock_mhz": read(lib.nvmlDeviceGetClockInfo, h, 2),
        "gpu_temp_c": read(lib.nvmlDeviceGetTemperature, h, 0),
        "hbm_temp_c": _field_value(lib, h, NVML_FI_DEV_MEMORY_TEMP),
        "power_w": power_mw if isinstance(power_mw, Unavailable) else power_mw / 1000.0,
        "power_instant_w": instant_mw if isinstance(instant_mw, Unavailable) else instant_mw / 1000.0,
        "power_limit_w": limit_mw if isinstance(limit_mw, Unavailable) else limit_mw / 1000.0,
        "energy_mj": read(lib.nvmlDeviceGetTotalEnergyConsumption, h),
        "utilization_gpu_pct": util if isinstance(util, Unavailable) else int(util.gpu),
        "utilization_mem_pct": util if isinstance(util, Unavailable) else int(util.memory),
        "memory_used_bytes": memory if isinstance(memory, Unavailable) else int(memory.used),
        "clock_event_reasons": read(_reasons_fn(lib), h),
    }


class TelemetrySampler:
    """Samples the given GPUs every ``interval_s`` in a thread (on a fixed grid from the start, so the rate
    holds however long a round takes; a round that overran skips the grid points it missed); each sample's
    ``t_s`` is when that GPU was read, seconds from the start. Unavailable fields become None in the
    samples and their reasons are kept once per GPU in ``unavailable``."""

    def __init__(self, nvml: Nvml, indices: list[int], interval_s: float) -> None:
        self._nvml, self._indices, self._interval_s = nvml, indices, interval_s
        self.samples: dict[int, list[dict[str, Any]]] = {i: [] for i in indices}
        self.unavailable: dict[int, dict[str, str]] = {i: {} for i in indices}
        self._stop = threading.Event()
        self._t0_ns = time.perf_counter_ns()
        self._thread = threading.Thread(target=self._loop, name="seatrial-telemetry", daemon=True)

    def __enter__(self) -> TelemetrySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        k = 0
        while True:
            for i in self._indices:
                t_s = (time.perf_counter_ns() - self._t0_ns) / 1e9
                self.samples[i].append(self._clean(i, {"t_s": round(t_s, 4), **sample_once(self._nvml, i)}))
            now_s = (time.perf_counter_ns() - self._t0_ns) / 1e9
            k = max(k + 1, int(now_s / self._interval_s) + 1)
            if self._stop.wait(max(0.0, k * self._interval_s - now_s)):
                return

    def _clean(self, index: int, sample: dict[str, Any]) -> dict[str, Any]:
        for key, value in sample.items():
            if isinstance(value, Unavailable):
                self.unavailable[index].setdefault(key, value.reason)
                sample[key] = None
        return sample
