"""burn: clock-event decoding, verdict rules on the recorded H200 burn, and a real (CPU) burn loop."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import torch

from seatrial.hw.burn import burn_one, run_burn
from seatrial.hw.burn_judge import judge_burn, summarize_samples
from seatrial.hw.telemetry import abnormal_clock_events, decode_clock_events
from seatrial.runs.verdicts import Verdict


def test_clock_event_bits_decode_one_by_one() -> None:
    assert decode_clock_events(0x4) == ["sw_power_cap"]
    assert decode_clock_events(0x1 | 0x8 | 0x40) == ["gpu_idle", "hw_slowdown", "hw_thermal_slowdown"]
    assert decode_clock_events(0x4 | 0x400) == ["sw_power_cap", "unknown_0x400"]
    assert decode_clock_events(0) == []


def test_power_cap_alone_is_normal_and_slowdowns_are_not() -> None:
    assert abnormal_clock_events(0x4) == []
    assert abnormal_clock_events(0x1 | 0x2 | 0x4 | 0x10 | 0x100) == []
    assert abnormal_clock_events(0x4 | 0x20) == ["sw_thermal_slowdown"]
    assert abnormal_clock_events(0x80) == ["hw_power_brake_slowdown"]
    assert abnormal_clock_events(0x800) == ["unknown_0x800"]


def judge(burn: dict[str, Any], best: float | None = None, min_share: float = 0.9) -> Any:
    compute = burn["compute"]
    return judge_burn(
        0, compute, burn["samples"], burn["telemetry_unavailable"], best or compute["tflops"], min_share
    )


def test_recorded_h200_burn_passes_with_power_cap_only(h200_burn: dict[str, Any]) -> None:
    result = judge(h200_burn)
    assert result.verdict is Verdict.PASS and result.reason is None
    tel = result.evidence["telemetry"]
    assert tel["sample_count"] == len(h200_burn["samples"]) == 61
    assert tel["clock_events_seen"] == {"sw_power_cap": 61}
    assert tel["power_limit_w"] == {"min": 700.0, "max": 700.0}
    assert tel["sm_clock_mhz"]["min"] == min(s["sm_clock_mhz"] for s in h200_burn["samples"])
    assert result.evidence["share_of_best"] == 1.0 and result.evidence["samples"] == h200_burn["samples"]


def test_a_thermal_slowdown_sample_fails_the_burn(h200_burn: dict[str, Any]) -> None:
    burn = copy.deepcopy(h200_burn)
    burn["samples"][30]["clock_event_reasons"] = 0x4 | 0x40
    result = judge(burn)
    assert result.verdict is Verdict.FAIL
    assert result.reason == "clock slowdown: hw_thermal_slowdown in 1 samples"


def test_mismatched_elements_fail_the_burn(h200_burn: dict[str, Any]) -> None:
    burn = copy.deepcopy(h200_burn)
    burn["compute"]["mismatched_elements"] = 12
    result = judge(burn)
    assert result.verdict is Verdict.FAIL and "12 elements differed" in (result.reason or "")


def test_a_gpu_below_its_share_of_the_best_fails(h200_burn: dict[str, Any]) -> None:
    best = h200_burn["compute"]["tflops"] / 0.8
    result = judge(h200_burn, best=best, min_share=0.9)
    assert result.verdict is Verdict.FAIL and "80.0% of the best GPU" in (result.reason or "")
    assert result.evidence["share_of_best"] == pytest.approx(0.8)


def test_unreadable_clock_events_need_review(h200_burn: dict[str, Any]) -> None:
    burn = copy.deepcopy(h200_burn)
    for s in burn["samples"]:
        s["clock_event_reasons"] = None
    burn["telemetry_unavailable"] = {"clock_event_reasons": "NVMLError_NotSupported: Not Supported"}
    result = judge(burn)
    assert result.verdict is Verdict.REVIEW_REQUIRED and "Not Supported" in (result.reason or "")


def test_summary_skips_missing_fields() -> None:
    samples = [{"sm_clock_mhz": 1000, "gpu_temp_c": None, "clock_event_reasons": 5}, {"sm_clock_mhz": 1500}]
    summary = summarize_samples(samples)
    assert summary["sm_clock_mhz"] == {"min": 1000, "max": 1500}
    assert summary["gpu_temp_c"] is None
    assert summary["clock_events_seen"] == {"gpu_idle": 1, "sw_power_cap": 1}


def test_cpu_burn_loop_compares_every_chunk_and_finds_no_mismatch() -> None:
    ev = burn_one(torch.device("cpu"), 64, 0.05, None)
    assert ev["checks"] >= 1 and ev["mismatched_elements"] == 0
    assert ev["iterations"] >= ev["checks"] > 0
    assert ev["tflops"] == pytest.approx(2 * 64**3 * ev["iterations"] / ev["elapsed_s"] / 1e12, abs=0.011)
    assert ev["window"]["end_unix_s"] > ev["window"]["start_unix_s"]


def test_burn_runs_on_every_device_at_once() -> None:
    """Issue 43: the 8 GPUs of a host burn together (one thread per device, started behind a barrier), so
    every device's window overlaps every other's (here 4 CPU devices)."""
    raw = run_burn({g: torch.device("cpu") for g in range(4)}, 32, 0.1)
    windows = [r["window"] for r in raw.values() if not isinstance(r, BaseException)]
    assert sorted(raw) == [0, 1, 2, 3] and len(windows) == 4
    assert max(w["start_unix_s"] for w in windows) < min(w["end_unix_s"] for w in windows)
