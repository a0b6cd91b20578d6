"""XID events over the whole run, through an NVML event set (``nvmlEventTypeXidCriticalError``)."""

from __future__ import annotations

import threading
import time
from typing import Any

from seatrial.hw.nvml import Nvml, error_text

XID_EVENT_MASK = 0x0000000000000008  # nvmlEventTypeXidCriticalError
WAIT_MS = 500


class XidWatcher:
    """Registers the selected GPUs in one event set and records every XID until :meth:`stop`.

    A GPU whose registration NVML refuses (NotSupported, NoPermission) gets an unavailable reading.
    """

    def __init__(self, nvml: Nvml, indices: list[int]) -> None:
        self._lib = nvml.lib
        self._events: dict[int, list[dict[str, Any]]] = {i: [] for i in indices}
        self._unavailable: dict[int, str] = {}
        self._stop = threading.Event()
        self._set: Any = None
        self._thread: threading.Thread | None = None
        self._started_unix_s = time.time()
        try:
            self._set = self._lib.nvmlEventSetCreate()
        except self._lib.NVMLError as exc:
            self._unavailable = {i: f"nvmlEventSetCreate: {error_text(exc)}" for i in indices}
            return
        for i in indices:
            try:
                self._lib.nvmlDeviceRegisterEvents(nvml.handle(i), XID_EVENT_MASK, self._set)
            except self._lib.NVMLError as exc:
                self._unavailable[i] = f"nvmlDeviceRegisterEvents: {error_text(exc)}"
        if len(self._unavailable) < len(indices):
            self._thread = threading.Thread(target=self._loop, name="seatrial-xid", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                data = self._lib.nvmlEventSetWait_v2(self._set, WAIT_MS)
            except self._lib.NVMLError_Timeout:
                continue
            except self._lib.NVMLError as exc:
                for i in self._events:
                    self._unavailable.setdefault(i, f"nvmlEventSetWait: {error_text(exc)}")
                return
            index = int(self._lib.nvmlDeviceGetIndex(data.device))
            event = {"xid": int(data.eventData), "time_unix_s": time.time()}
            self._events.setdefault(index, []).append(event)

    def stop(self) -> dict[int, dict[str, Any]]:
        """Stop watching; return per GPU ``{"events": [...], "window_s": ...}`` or an unavailable reading."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._set is not None:
            self._lib.nvmlEventSetFree(self._set)
        window_s = round(time.time() - self._started_unix_s, 3)
        return {
            i: {"unavailable": self._unavailable[i]}
            if i in self._unavailable
            else {"events": events, "window_s": window_s}
            for i, events in self._events.items()
        }
