"""Issue 21 item 18: ``hw --ray``'s fleet rule judges like with like: figures grouped by GPU model and
power limit, the median and MAD of each kind, a relative verdict only from 3 or more of a kind (and why
not otherwise), a median of 0 never a pass. Issue 43: the same rule across the GPUs of one host, in the
sheet ``seatrial hw`` writes, with each trial's wall time."""

from __future__ import annotations

from typing import Any

import pytest

from seatrial.hw import HwConfig, run_hw, runner
from seatrial.hw.context import HwContext
from seatrial.hw.env import HwEnv
from seatrial.hw.fleet import fleet_verdicts, host_verdicts
from seatrial.hw.nvml import Nvml
from seatrial.hw.registry import HW_TRIALS, HwTrial
from seatrial.runs.result import TrialResult
from seatrial.runs.summaries.hw import GpuInfo
from seatrial.runs.verdicts import Verdict

from .fake_nvml import FakeNvmlLib


def node(name: str, gpus: list[tuple[str, float, float]], trial: str = "precision.bf16") -> dict[str, Any]:
    """A node's sheet: per GPU (model, power limit W, TFLOP/s)."""
    return {"node": name,
            "gpus": [{"index": i, "name": model, "power_limit_w": watts} for i, (model, watts, _) in enumerate(gpus)],
            "trials": [{"name": trial, "gpu": i, "verdict": "PASS", "evidence": {"tflops": t}}
                       for i, (_, _, t) in enumerate(gpus)]}  # fmt: skip


def verdicts(nodes: list[dict[str, Any]]) -> dict[tuple[str, int | None], tuple[str, str | None]]:
    return {(r.node or "", r.gpu): (r.verdict.value, r.reason) for r in fleet_verdicts(nodes, 0.10)}


H200, H100 = "NVIDIA H200", "NVIDIA H100 80GB HBM3"


def test_other_models_and_power_limits_are_other_kinds() -> None:
    """Three H200 at 700 W and three H100 (or H200 capped at 450 W): the slower kind is not 'below the
    fleet' (pooled, all three would have been flagged)."""
    nodes = [node("a", [(H200, 700, 670.0), (H100, 700, 495.0)]), node("b", [(H200, 700, 668.0), (H100, 700, 500.0)]),
             node("c", [(H200, 700, 672.0), (H100, 700, 498.0)]), node("d", [(H200, 450, 455.0)] * 3)]  # fmt: skip
    got = verdicts(nodes)
    assert all(v == "PASS" for v, _ in got.values()), got
    row = next(r for r in fleet_verdicts(nodes, 0.10) if r.node == "a" and r.gpu == 1)
    assert row.evidence["kind"] == f"{H100} at 700 W" and row.evidence["measured"] == 3


def test_one_slow_gpu_among_its_kind_is_flagged_with_its_spread() -> None:
    nodes = [
        node("a", [(H200, 700, 670.0), (H200, 700, 665.0)]),
        node("b", [(H200, 700, 668.0), (H200, 700, 540.0)]),
    ]
    got = verdicts(nodes)
    assert got[("b", 1)][0] == "REVIEW_REQUIRED" and "81% of the median 666.5 of the 4" in (
        got[("b", 1)][1] or ""
    )
    assert [v for k, (v, _) in got.items() if k != ("b", 1)] == ["PASS"] * 3
    weak = next(r for r in fleet_verdicts(nodes, 0.10) if r.gpu == 1 and r.node == "b")
    assert weak.evidence["mad"] == 2.5 and weak.evidence["robust_z"] < -3


def test_two_of_a_kind_cannot_say_which_one_is_off() -> None:
    got = verdicts([node("a", [(H200, 700, 670.0)]), node("b", [(H200, 700, 540.0)])])
    assert {v for v, _ in got.values()} == {"UNAVAILABLE"}
    assert all("two cannot say which one is off" in (why or "") for _, why in got.values())


def test_a_median_of_zero_is_no_pass() -> None:
    got = verdicts([node(n, [(H200, 700, t)]) for n, t in (("a", 0.0), ("b", 0.0), ("c", 0.0), ("d", 650.0))])
    assert {v for v, _ in got.values()} == {"INCONCLUSIVE"} and "no reference" in (got[("a", 0)][1] or "")


def test_a_kind_that_varies_widely_singles_no_one_out() -> None:
    got = verdicts([node(n, [(H200, 700, t)]) for n, t in (("a", 700.0), ("b", 600.0), ("c", 500.0))])
    assert got[("c", 0)][0] == "INCONCLUSIVE" and "vary too much" in (got[("c", 0)][1] or "")
    assert got[("a", 0)][0] == got[("b", 0)][0] == "PASS"


def _rows(trial: str, tflops: list[float]) -> list[TrialResult]:
    return [TrialResult(name=trial, gpu=g, verdict=Verdict.PASS, evidence={"tflops": t}) for g, t in enumerate(tflops)]


EIGHT = [GpuInfo(index=i, name=H200, power_limit_w=700.0) for i in range(8)]


def test_one_slow_gpu_of_eight_on_a_host_is_flagged_beside_the_median() -> None:
    """Seed 004's 8 GPUs of a node: GPU 5's BF16 and burn are 81% of the others'; rows without a node."""
    bf16 = [670.0, 668.0, 672.0, 665.0, 671.0, 540.0, 669.0, 667.0]
    trials = _rows("precision.bf16", bf16) + _rows("burn", [t - 2 for t in bf16])
    trials.append(TrialResult(name="collectives", gpu=None, verdict=Verdict.PASS, evidence={"busbw_gbps": {}}))
    rows = host_verdicts(EIGHT, trials, 0.10)
    assert {r.name for r in rows} == {"fleet.precision.bf16", "fleet.burn"} and len(rows) == 16
    flagged = [(r.name, r.gpu) for r in rows if r.verdict is Verdict.REVIEW_REQUIRED]
    assert flagged == [("fleet.precision.bf16", 5), ("fleet.burn", 5)]
    assert all(r.verdict is Verdict.PASS for r in rows if r.gpu != 5) and {r.node for r in rows} == {None}
    five = next(r for r in rows if r.gpu == 5 and r.name == "fleet.precision.bf16")
    assert five.evidence["kind_median"] == 668.5 and five.evidence["measured"] == 8
    assert five.reason == f"540.0 is 81% of the median 668.5 of the 8 of its kind ({H200} at 700 W), more than 10% below"


def test_a_host_of_two_gets_no_relative_verdict_and_a_mixed_host_judges_like_with_like() -> None:
    assert host_verdicts(EIGHT[:2], _rows("precision.bf16", [670.0, 540.0]), 0.10) == []
    mixed = [*EIGHT[:4], *(GpuInfo(index=i, name=H200, power_limit_w=450.0) for i in (4, 5))]
    rows = host_verdicts(mixed, _rows("precision.bf16", [670.0, 668.0, 672.0, 665.0, 455.0, 452.0]), 0.10)
    assert [r.verdict for r in rows] == [Verdict.PASS] * 4 + [Verdict.UNAVAILABLE] * 2
    assert [r.gpu for r in rows] == [0, 1, 2, 3, 4, 5] and "only 2 of its kind" in (rows[5].reason or "")


def test_seatrial_hw_on_eight_gpus_adds_the_host_rule_and_each_trials_wall_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through run_hw (NVML's 8 GPUs faked, the trial's figures synthetic): the fleet rows follow the trial's,
    and every row the trial returned states the trial's wall time."""
    env = HwEnv(nvml=Nvml(lib=FakeNvmlLib(count=8), device_count=8), nvml_reason=None)  # type: ignore[arg-type]
    monkeypatch.setattr(runner, "probe", lambda: env)
    figures = [670.0, 668.0, 672.0, 665.0, 671.0, 669.0, 667.0, 500.0]

    def bf16(ctx: HwContext, name: str) -> list[TrialResult]:
        return _rows(name, [figures[g] for g in ctx.selected])

    monkeypatch.setitem(HW_TRIALS, "precision.bf16", HwTrial(bf16))
    trials = run_hw(HwConfig(trials=["precision.bf16"], fleet_margin=0.2)).report.trials
    assert [(t.name, t.gpu) for t in trials] == [("precision.bf16", g) for g in range(8)] + [
        ("fleet.precision.bf16", g) for g in range(8)]  # fmt: skip
    assert len({t.evidence["trial_wall_s"] for t in trials[:8]}) == 1
    assert [t.gpu for t in trials[8:] if t.verdict is Verdict.REVIEW_REQUIRED] == [7]
    assert trials[15].evidence["margin"] == 0.2
    three = run_hw(HwConfig(gpus=[0, 1, 7], trials=["precision.bf16"]), host_fleet=False).report.trials
    assert [t.name for t in three] == ["precision.bf16"] * 3
