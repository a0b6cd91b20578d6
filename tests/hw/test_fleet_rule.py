"""Issue 21 item 18: ``hw --ray``'s fleet rule judges like with like: figures grouped by GPU model and
power limit, the median and MAD of each kind, a relative verdict only from 3 or more of a kind (and why
not otherwise), a median of 0 never a pass."""

from __future__ import annotations

from typing import Any

from seatrial.hw.fleet import fleet_verdicts


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
