"""health.*: NVML readings through the fail-soft layer, and the verdict rules on recorded H200 readings."""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest

from seatrial.hw.health import read_health
from seatrial.hw.health_judge import judge_health
from seatrial.hw.nvml import Nvml, Unavailable, read
from seatrial.hw.xid import XidWatcher
from seatrial.runs.verdicts import Verdict

from .fake_nvml import FakeNvmlLib, NVMLError_NoPermission, NVMLError_NotSupported


def verdicts(results: list[Any]) -> dict[str, tuple[Verdict, str | None]]:
    return {r.name.removeprefix("health."): (r.verdict, r.reason) for r in results}


def test_recorded_h200_readings_give_pass_and_unavailable_with_nvml_reason(
    h200_artifacts: dict[str, Any],
) -> None:
    rec = h200_artifacts["health_readings"]["0"]
    got = verdicts(judge_health(0, rec["start"], rec["end"], rec["xid"]))
    assert {k: v[0] for k, v in got.items()} == {
        "ecc": Verdict.PASS,
        "retired_pages": Verdict.UNAVAILABLE,
        "row_remap": Verdict.PASS,
        "xid": Verdict.PASS,
        "nvlink": Verdict.UNAVAILABLE,
        "pcie": Verdict.PASS,
    }
    assert "NVMLError_NotSupported" in (got["retired_pages"][1] or "")
    assert "nvmlDeviceGetNvLinkState" in (got["nvlink"][1] or "")


@pytest.mark.parametrize(
    ("part", "path", "value", "expected", "in_reason"),
    [
        ("ecc", ("ecc", "uncorrected_volatile"), 1, Verdict.FAIL, "volatile 1"),
        ("ecc", ("ecc", "uncorrected_aggregate"), 3, Verdict.FAIL, "grew by 3"),
        ("ecc", ("ecc", "mode"), [0, 0], Verdict.REVIEW_REQUIRED, "turned off"),
        ("row_remap", ("row_remap", "failure"), 1, Verdict.FAIL, "failed"),
        ("row_remap", ("row_remap", "pending"), 1, Verdict.REVIEW_REQUIRED, "reset"),
        ("pcie", ("pcie", "replay_counter"), 7, Verdict.REVIEW_REQUIRED, "grew by 7"),
        ("retired_pages", ("retired_pages", "double_bit"), 2, Verdict.REVIEW_REQUIRED, "2 page(s)"),
        ("retired_pages", ("retired_pages", "pending"), 1, Verdict.FAIL, "pending"),
    ],
)
def test_changed_end_reading_changes_the_verdict(
    h200_artifacts: dict[str, Any],
    part: str,
    path: tuple[str, str],
    value: Any,
    expected: Verdict,
    in_reason: str,
) -> None:
    rec = h200_artifacts["health_readings"]["0"]
    end = copy.deepcopy(rec["end"])
    end[path[0]][path[1]] = value
    verdict, reason = verdicts(judge_health(0, rec["start"], end, rec["xid"]))[part]
    assert verdict is expected
    assert in_reason in (reason or "")


def test_lifetime_uncorrected_errors_alone_need_review(h200_artifacts: dict[str, Any]) -> None:
    rec = copy.deepcopy(h200_artifacts["health_readings"]["0"])
    rec["start"]["ecc"]["uncorrected_aggregate"] = rec["end"]["ecc"]["uncorrected_aggregate"] = 4
    verdict, reason = verdicts(judge_health(0, rec["start"], rec["end"], rec["xid"]))["ecc"]
    assert verdict is Verdict.REVIEW_REQUIRED and "4 uncorrected" in (reason or "")


def test_xid_event_fails_and_names_the_code(h200_artifacts: dict[str, Any]) -> None:
    rec = h200_artifacts["health_readings"]["0"]
    xid = {"events": [{"xid": 79, "time_unix_s": 1.0}], "window_s": 60.0}
    verdict, reason = verdicts(judge_health(0, rec["start"], rec["end"], xid))["xid"]
    assert verdict is Verdict.FAIL and "[79]" in (reason or "")


def nvlink(replay: int, active: bool = True) -> dict[str, Any]:
    link = {"active": active, "replay": replay, "recovery": 0, "crc_flit": 0, "crc_data": 0}
    return {"links": {"0": link, "1": {**link, "replay": 0}}}


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        (nvlink(5), nvlink(5), Verdict.PASS),
        (nvlink(5), nvlink(9), Verdict.REVIEW_REQUIRED),
        (nvlink(0), nvlink(0, active=False), Verdict.REVIEW_REQUIRED),
    ],
)
def test_nvlink_counters_grow_or_links_down(
    h200_artifacts: dict[str, Any], start: dict[str, Any], end: dict[str, Any], expected: Verdict
) -> None:
    rec = copy.deepcopy(h200_artifacts["health_readings"]["0"])
    rec["start"]["nvlink"], rec["end"]["nvlink"] = start, end
    assert verdicts(judge_health(0, rec["start"], rec["end"], rec["xid"]))["nvlink"][0] is expected


def test_read_maps_nvml_errors_to_unavailable_and_reraises_others() -> None:
    def not_supported() -> None:
        raise NVMLError_NotSupported()

    def broken() -> None:
        raise ZeroDivisionError

    value = read(not_supported)
    assert (
        isinstance(value, Unavailable)
        and value.reason == "not_supported: NVMLError_NotSupported: Not Supported"
    )
    with pytest.raises(ZeroDivisionError):
        read(broken)


def test_no_permission_is_unavailable_never_fail() -> None:
    lib = FakeNvmlLib(
        ecc=NVMLError_NoPermission, remap=NVMLError_NoPermission, pcie_replay=NVMLError_NoPermission
    )
    nvml = Nvml(lib=lib, device_count=1)  # type: ignore[arg-type]
    start = read_health(nvml, 0)
    got = verdicts(
        judge_health(0, start, read_health(nvml, 0), {"unavailable": "nvmlDeviceRegisterEvents: x"})
    )
    assert all(v is Verdict.UNAVAILABLE for v, _ in got.values())
    assert "Insufficient Permissions" in (got["ecc"][1] or "")


def test_read_health_shapes_the_readings_like_the_recorded_ones(h200_artifacts: dict[str, Any]) -> None:
    nvml = Nvml(lib=FakeNvmlLib(remap=(1, 0, 1, 0)), device_count=1)  # type: ignore[arg-type]
    got = read_health(nvml, 0)
    recorded = h200_artifacts["health_readings"]["0"]["start"]
    assert set(got) == set(recorded)
    assert got["row_remap"] == {"corrected_rows": 1, "uncorrected_rows": 0, "pending": 1, "failure": 0}
    assert got["retired_pages"]["single_bit"] == recorded["retired_pages"]["single_bit"]


def test_xid_watcher_records_events_per_gpu_and_unavailable_registrations() -> None:
    lib = FakeNvmlLib(count=2, xid_events=[(1, 48), (1, 79)])
    watcher = XidWatcher(Nvml(lib=lib, device_count=2), [0, 1])  # type: ignore[arg-type]
    deadline = time.monotonic() + 5
    while lib.readings["xid_events"] and time.monotonic() < deadline:
        time.sleep(0.01)
    result = watcher.stop()
    assert result[0]["events"] == []
    assert [e["xid"] for e in result[1]["events"]] == [48, 79]
    refused = XidWatcher(Nvml(lib=FakeNvmlLib(register_events=NVMLError_NotSupported), device_count=1), [0])  # type: ignore[arg-type]
    assert refused.stop() == {
        0: {"unavailable": "nvmlDeviceRegisterEvents: NVMLError_NotSupported: Not Supported"}
    }


NOT_READ = {"unavailable": "nvmlDeviceGetTotalEccErrors: NVMLError_NoPermission: Insufficient Permissions"}


def test_unreadable_uncorrected_counters_are_never_a_pass(h200_artifacts: dict[str, Any]) -> None:
    """Issue 16 item 9: a counter that could not be read is not a 0."""
    rec = copy.deepcopy(h200_artifacts["health_readings"]["0"])
    for reading in (rec["start"], rec["end"]):
        reading["ecc"]["uncorrected_volatile"] = NOT_READ
        reading["ecc"]["uncorrected_aggregate"] = NOT_READ
    got = verdicts(judge_health(0, rec["start"], rec["end"], rec["xid"]))
    assert got["ecc"][0] is Verdict.UNAVAILABLE
    assert "not read: end.uncorrected_volatile, end.uncorrected_aggregate" in (got["ecc"][1] or "")


def test_a_fault_in_the_readable_part_still_stands(h200_artifacts: dict[str, Any]) -> None:
    rec = copy.deepcopy(h200_artifacts["health_readings"]["0"])
    rec["end"]["ecc"]["uncorrected_volatile"] = 2
    rec["start"]["ecc"]["uncorrected_aggregate"] = NOT_READ
    got = verdicts(judge_health(0, rec["start"], rec["end"], rec["xid"]))
    assert got["ecc"][0] is Verdict.FAIL and "volatile 2" in (got["ecc"][1] or "")
    rec["end"]["ecc"]["uncorrected_volatile"] = 0
    got = verdicts(judge_health(0, rec["start"], rec["end"], rec["xid"]))
    assert got["ecc"] == (Verdict.UNAVAILABLE, got["ecc"][1]) and "start.uncorrected_aggregate" in (
        got["ecc"][1] or ""
    )


def test_unreadable_pcie_start_or_nvlink_counter_is_not_a_pass(h200_artifacts: dict[str, Any]) -> None:
    rec = copy.deepcopy(h200_artifacts["health_readings"]["0"])
    rec["start"]["pcie"]["replay_counter"] = NOT_READ
    links = {"0": {"active": True, "replay": 0, "recovery": 0, "crc_flit": NOT_READ, "crc_data": 0}}
    rec["start"]["nvlink"] = {"links": links}
    rec["end"]["nvlink"] = {"links": copy.deepcopy(links)}
    got = verdicts(judge_health(0, rec["start"], rec["end"], rec["xid"]))
    assert got["pcie"][0] is Verdict.UNAVAILABLE and "start.replay_counter" in (got["pcie"][1] or "")
    assert got["nvlink"][0] is Verdict.UNAVAILABLE and "link 0 crc_flit" in (got["nvlink"][1] or "")
