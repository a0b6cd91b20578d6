"""A stand-in for the pynvml module: enough of its API, its error classes, and settable readings."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):
    def __str__(self) -> str:
        return "Not Supported"


class NVMLError_NoPermission(NVMLError):
    def __str__(self) -> str:
        return "Insufficient Permissions"


class NVMLError_Timeout(NVMLError):
    def __str__(self) -> str:
        return "Timeout"


class FakeNvmlLib:
    """Readings per GPU index; a reading that is an exception class is raised when asked for."""

    NVMLError = NVMLError
    NVMLError_Timeout = NVMLError_Timeout

    def __init__(self, count: int = 1, **overrides: Any) -> None:
        self.count = count
        self.readings: dict[str, Any] = {
            "name": "NVIDIA H200",
            "uuid": "GPU-7b517379-0380-607d-62da-d3aaebc8715e",
            "cc": (9, 0),
            "memory_total": 150754820096,
            "pcie_gen": 5,
            "pcie_width": 16,
            "virt": 1,
            "mig": [0, 0],
            "ecc": 0,
            "ecc_mode": [1, 1],
            "retired": NVMLError_NotSupported,
            "remap": (0, 0, 0, 0),
            "nvlink_state": NVMLError_NotSupported,
            "pcie_replay": 0,
            "xid_events": [],
            "register_events": None,
            "clocks": {1: 1965, 2: 3201},
            "temp": 50,
            "hbm_temp": NVMLError_NotSupported,
            "power_mw": 613626,
            "power_instant_mw": 620000,
            "energy_mj": 5_000_000,
            "power_limit_mw": 700000,
            "util": 97,
            "memory_used": 120 << 30,
            "clock_events": 0x4,
        }
        self.readings.update(overrides)

    def _get(self, key: str) -> Any:
        value = self.readings[key]
        if isinstance(value, type) and issubclass(value, Exception):
            raise value()
        return value

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetIndex(self, h: int) -> int:
        return h

    def nvmlDeviceGetName(self, h: int) -> str:
        return str(self._get("name"))

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return str(self._get("uuid"))

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> Any:
        return self._get("cc")

    def nvmlDeviceGetMemoryInfo(self, h: int) -> Any:
        return SimpleNamespace(total=self._get("memory_total"), used=self._get("memory_used"))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> Any:
        return self._get("pcie_gen")

    nvmlDeviceGetMaxPcieLinkGeneration = nvmlDeviceGetCurrPcieLinkGeneration

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> Any:
        return self._get("pcie_width")

    nvmlDeviceGetMaxPcieLinkWidth = nvmlDeviceGetCurrPcieLinkWidth

    def nvmlDeviceGetVirtualizationMode(self, h: int) -> Any:
        return self._get("virt")

    def nvmlDeviceGetMigMode(self, h: int) -> Any:
        return self._get("mig")

    def nvmlSystemGetDriverVersion(self) -> str:
        return "580.159.04"

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return 13000

    def nvmlDeviceGetTotalEccErrors(self, h: int, error_type: int, counter: int) -> Any:
        value = self._get("ecc")
        return value[(error_type, counter)] if isinstance(value, dict) else value

    def nvmlDeviceGetEccMode(self, h: int) -> Any:
        return self._get("ecc_mode")

    def nvmlDeviceGetRetiredPages(self, h: int, cause: int) -> Any:
        return self._get("retired")

    def nvmlDeviceGetRetiredPagesPendingStatus(self, h: int) -> Any:
        self._get("retired")
        return 0

    def nvmlDeviceGetRemappedRows(self, h: int) -> Any:
        return self._get("remap")

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> Any:
        return self._get("nvlink_state")

    def nvmlDeviceGetNvLinkErrorCounter(self, h: int, link: int, counter: int) -> Any:
        return 0

    def nvmlDeviceGetPcieReplayCounter(self, h: int) -> Any:
        return self._get("pcie_replay")

    def nvmlEventSetCreate(self) -> str:
        return "event-set"

    def nvmlDeviceRegisterEvents(self, h: int, mask: int, event_set: str) -> None:
        self._get("register_events")

    def nvmlEventSetWait_v2(self, event_set: str, timeout_ms: int) -> Any:
        events = self.readings["xid_events"]
        if events:
            gpu, xid = events.pop(0)
            return SimpleNamespace(device=gpu, eventData=xid)
        time.sleep(0.01)
        raise NVMLError_Timeout()

    def nvmlEventSetFree(self, event_set: str) -> None:
        return None

    def nvmlDeviceGetClockInfo(self, h: int, clock: int) -> Any:
        return self._get("clocks")[clock]

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> Any:
        return self._get("temp")

    def nvmlDeviceGetFieldValues(self, h: int, field_ids: list[int]) -> Any:
        key = {82: "hbm_temp", 186: "power_instant_mw"}[field_ids[0]]
        value = SimpleNamespace(uiVal=self._get(key))
        return [SimpleNamespace(nvmlReturn=0, valueType=1, value=value)]

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> Any:
        return self._get("energy_mj")

    def nvmlDeviceGetPowerUsage(self, h: int) -> Any:
        return self._get("power_mw")

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> Any:
        return self._get("power_limit_mw")

    def nvmlDeviceGetUtilizationRates(self, h: int) -> Any:
        return SimpleNamespace(gpu=self._get("util"), memory=self._get("util") // 2)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: int) -> Any:
        return self._get("clock_events")
