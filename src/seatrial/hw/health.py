"""``health``: ECC, retired pages, row remapper, NVLink and PCIe replay counters, read through NVML.

Readings are taken at the start and at the end of a run, kept as JSON (an unavailable reading is
``{"unavailable": reason}``), and judged by the pure ``judge_*`` functions, so that the verdict
logic can be tested on recorded readings. XID events come from :mod:`seatrial.hw.xid`.
"""

from __future__ import annotations

from typing import Any

from seatrial.hw.nvml import Nvml, jsonable, read

#: (name, nvmlMemoryErrorType_t, nvmlEccCounterType_t)
ECC_COUNTERS = (
    ("corrected_volatile", 0, 0),
    ("corrected_aggregate", 0, 1),
    ("uncorrected_volatile", 1, 0),
    ("uncorrected_aggregate", 1, 1),
)
#: nvmlNvLinkErrorCounter_t: DL replay, DL recovery, CRC flit, CRC data.
NVLINK_COUNTERS = (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3))
NVLINK_MAX_LINKS = 18


def read_health(nvml: Nvml, index: int) -> dict[str, Any]:
    """All health counters of one GPU as JSON-ready readings."""
    lib, h = nvml.lib, nvml.handle(index)
    ecc: dict[str, Any] = {
        name: read(lib.nvmlDeviceGetTotalEccErrors, h, et, ct) for name, et, ct in ECC_COUNTERS
    }
    ecc["mode"] = read(lib.nvmlDeviceGetEccMode, h)
    remap = read(lib.nvmlDeviceGetRemappedRows, h)
    row_remap = (
        remap
        if not isinstance(remap, tuple | list)
        else dict(
            zip(
                ("corrected_rows", "uncorrected_rows", "pending", "failure"),
                (int(x) for x in remap),
                strict=True,
            )
        )
    )
    return jsonable(
        {
            "ecc": ecc,
            "retired_pages": {
                "single_bit": _count(read(lib.nvmlDeviceGetRetiredPages, h, 0)),
                "double_bit": _count(read(lib.nvmlDeviceGetRetiredPages, h, 1)),
                "pending": read(lib.nvmlDeviceGetRetiredPagesPendingStatus, h),
            },
            "row_remap": row_remap,
            "nvlink": _read_nvlink(lib, h),
            "pcie": {"replay_counter": read(lib.nvmlDeviceGetPcieReplayCounter, h)},
        }
    )


def _count(value: Any) -> Any:
    return len(value) if isinstance(value, list | tuple) else value


def _read_nvlink(lib: Any, h: Any) -> Any:
    """Per-link state and error counters; the whole reading is unavailable when link 0 is."""
    links: dict[str, Any] = {}
    for link in range(NVLINK_MAX_LINKS):
        state = read(lib.nvmlDeviceGetNvLinkState, h, link)
        if link == 0 and not isinstance(state, int):
            return state
        if not isinstance(state, int):
            continue
        entry: dict[str, Any] = {"active": bool(state)}
        if state:
            for name, counter in NVLINK_COUNTERS:
                entry[name] = read(lib.nvmlDeviceGetNvLinkErrorCounter, h, link, counter)
        links[str(link)] = entry
    return {"links": links}
