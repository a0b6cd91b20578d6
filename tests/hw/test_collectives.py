"""collectives: nccl-tests formulas, and the real trial logic over gloo across 2 CPU processes."""

from __future__ import annotations

import itertools

import pytest

from seatrial.hw.collectives import OPS, bus_factor, message_sizes, run_collectives
from seatrial.hw.collectives_judge import judge_collectives, unavailable_collectives
from seatrial.verdict import Verdict


def test_nccl_tests_bus_bandwidth_factors() -> None:
    assert bus_factor("all_reduce", 8) == pytest.approx(1.75)
    assert bus_factor("all_gather", 8) == pytest.approx(0.875)
    assert bus_factor("all_reduce", 2) == pytest.approx(1.0)
    assert bus_factor("all_gather", 2) == pytest.approx(0.5)


def test_default_sizes_run_from_1_mb_to_1_gb() -> None:
    sizes = message_sizes(1 << 20, 1 << 30)
    assert len(sizes) == 11 and sizes[0] == 1 << 20 and sizes[-1] == 1 << 30
    assert all(b == 2 * a for a, b in itertools.pairwise(sizes))


def test_gloo_across_two_processes_is_correct_and_uses_the_formulas() -> None:
    sizes = [4096, 65536]
    rows = run_collectives(2, "gloo", sizes)
    assert [(r["op"], r["size_bytes"]) for r in rows] == [(op, s) for s in sizes for op in OPS]
    for r in rows:
        assert r["correct"] is True
        algbw = r["size_bytes"] / (r["time_us"] / 1e6) / 1e9
        assert r["algbw_gbps"] == pytest.approx(algbw, rel=1e-2)
        assert r["busbw_gbps"] == pytest.approx(r["algbw_gbps"] * bus_factor(r["op"], 2), rel=1e-2)
    result = judge_collectives(rows, 2, "gloo")
    assert result.verdict is Verdict.PASS and result.gpu is None
    assert set(result.evidence["busbw_gbps"]) == {"all_reduce", "all_gather"}
    assert set(result.evidence["busbw_gbps"]["all_reduce"]) == {"4096", "65536"}


def test_a_wrong_result_fails_and_one_gpu_is_unavailable() -> None:
    row = {"op": "all_gather", "size_bytes": 1 << 20, "busbw_gbps": 100.0, "correct": False}
    result = judge_collectives([row], 8, "nccl")
    assert result.verdict is Verdict.FAIL and result.reason == "wrong result: all_gather 1048576 B"
    single = unavailable_collectives(1)
    assert (
        single.verdict is Verdict.UNAVAILABLE
        and single.reason == "collectives need at least 2 GPUs; 1 selected"
    )
