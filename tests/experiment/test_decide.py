"""``seatrial.experiment.decide`` on synthetic per-start levels of known effect: failed starts and
``allow_failed_starts``, Holm's steps across treatments, drift, the A/A halves."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from seatrial.experiment.checks import halves
from seatrial.experiment.decide import decisions
from seatrial.experiment.plan import SEARCH_LEVEL, ExperimentPlan, schedule


def make_plan(treatments: int = 1, **over: Any) -> ExperimentPlan:
    return ExperimentPlan.model_validate(
        {
            "serve": {"command": ["engine", "--port", "{port}"]},
            "baseline": {"name": "a", "args": ["--x", "0"]},
            "treatments": [{"name": f"t{i}", "args": ["--x", str(i)]} for i in range(1, treatments + 1)],
            "workload": {"concurrency": [8]},
            "decide": {
                "profiles": {"batch": {"concurrency": 8, "metric": "output_tok_s", "min_gain_pct": 5}}
            },
            **over,
        }
    )


def levels_for(
    plan: ExperimentPlan, gains: dict[str, float], sd: float = 0.01, drift: float = 0.0, seed: int = 0
) -> dict[str, dict[int, list[dict[str, Any]]]]:
    """Each setting's starts in run order: throughput 1000 x (1 + gain) x noise x (1 + drift)^slot."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for slot, (name, k) in enumerate(schedule(plan)):
        value = 1000 * (1 + gains.get(name, 0.0)) * rng.lognormal(0, sd) * (1 + drift) ** slot
        level = {"output_tok_s": value, "values": {}, "start": k, "slot": slot, "stalled": None}
        out.setdefault(name, {}).setdefault(8, []).append(level)
    return out


def test_a_failed_start_caps_the_setting_unless_the_plan_allows_it() -> None:
    plan = make_plan()
    levels = levels_for(plan, {"t1": 0.5})
    failures = {"t1": [{"start": 2, "concurrency": 8, "reason": "level C=8 INVALID (client lag)"}],
                "a": [{"start": 0, "concurrency": 4, "reason": "level C=4 INVALID (another level)"}]}  # fmt: skip
    capped = decisions(plan, levels, {}, failures)["decisions"][0]
    assert capped["verdict"] == "INCONCLUSIVE" and capped["failed_starts"] == [
        "t1 start 3: level C=8 INVALID (client lag)"
    ]  # the baseline's failure at C=4 does not touch a C=8 decision
    assert capped["holm"] is None and capped["ci_pct"][0] > 40  # the data alone would adopt
    allowed = decisions(make_plan(allow_failed_starts=True), levels, {}, failures)["decisions"][0]
    assert allowed["verdict"] == "ADOPT" and allowed["failed_starts"] == capped["failed_starts"]
    gone = {"a": [{"start": 1, "concurrency": None, "reason": "did not come up (2 attempts)"}]}
    assert "a start 2: did not come up" in decisions(plan, levels, {}, gone)["decisions"][0]["reasons"][0]


def test_holm_tests_the_clearest_claim_first_and_the_rest_at_stricter_levels() -> None:
    plan = make_plan(treatments=3)
    rows = decisions(plan, levels_for(plan, {"t1": 0.5, "t2": 0.12, "t3": 0.0}), {})["decisions"]
    by = {r["treatment"]: r for r in rows}
    assert [by[t]["holm"]["step"] for t in ("t1", "t2")] == [1, 2] and by["t1"]["holm"]["family"] == 3
    assert by["t1"]["confidence"] == pytest.approx(1 - 2 * 0.025 / 3)
    assert by["t2"]["confidence"] == pytest.approx(1 - 2 * 0.025 / 2)
    assert by["t1"]["verdict"] == by["t2"]["verdict"] == "ADOPT" and by["t3"]["verdict"] != "ADOPT"
    # a wider interval than the plan's 95%: the same data, alone, is judged at 95%
    alone = decisions(make_plan(), levels_for(make_plan(), {"t1": 0.5}), {})["decisions"][0]
    assert alone["confidence"] == pytest.approx(0.95) and alone["holm"]["family"] == 1


def test_drift_over_the_run_is_measured_and_flagged() -> None:
    plan = make_plan(starts=4)
    drift = decisions(plan, levels_for(plan, {}, sd=0.005, drift=0.02), {})["drift"][0]
    assert drift["flag"] == "DRIFT" and drift["slots"] == 8
    assert drift["pct_per_slot"] == pytest.approx(2.0, abs=0.5)
    lo, hi = drift["over_run_ci_pct"]
    assert 5 < lo < drift["over_run_pct"] < hi
    steady = decisions(plan, levels_for(plan, {}, sd=0.005), {})["drift"][0]
    assert steady["flag"] is None and steady["over_run_ci_pct"][0] < 0 < steady["over_run_ci_pct"][1]


def test_abba_halves_balance_a_linear_drift() -> None:
    starts = [{"slot": s} for s in (0, 3, 4, 7, 8, 11, 12, 15)]  # a baseline's slots in ABBA with 2 settings
    first, second = halves(starts)
    assert [lv["slot"] for lv in first] == [0, 7, 8, 15] and [lv["slot"] for lv in second] == [3, 4, 11, 12]
    assert np.mean([lv["slot"] for lv in first]) == np.mean([lv["slot"] for lv in second])
    plan = make_plan(starts=4)
    checks = decisions(plan, levels_for(plan, {}, sd=0.005, drift=0.02), {})["aa_checks"]
    assert checks[0]["check"] == "baseline halves" and checks[0]["status"] == "OK"  # drift is not a moved A/A


def with_ttft(levels: dict[str, dict[int, list[dict[str, Any]]]], scale: dict[str, float], seed: int = 1) -> None:
    """Give every start 200 TTFTs around 100 ms x ``scale[setting]`` (a request-level metric to guard)."""
    rng = np.random.default_rng(seed)
    for name, by_c in levels.items():
        for lv in by_c[8]:
            lv["values"]["ttft_ms"] = 100 * scale.get(name, 1.0) * rng.lognormal(0, 0.02, 200)
            lv.pop("per_start", None)  # each start's statistics are computed once and kept


def test_a_clearly_slower_treatment_is_rejected() -> None:
    """Catches a REJECT branch that never fires (the verdict would stay INCONCLUSIVE)."""
    plan = make_plan()
    row = decisions(plan, levels_for(plan, {"t1": -0.3}), {})["decisions"][0]
    assert row["verdict"] == "REJECT", row
    assert row["ci_pct"][1] < -row["threshold_pct"] and row["gain_pct"] == pytest.approx(-30, abs=3)


def test_a_change_inside_the_threshold_is_no_effect_and_a_small_real_one_is_not() -> None:
    """Catches NO_EFFECT that is never said, or said for an interval that leaves +-min_gain."""
    plan = make_plan()
    same = decisions(plan, levels_for(plan, {"t1": 0.0}, sd=0.003), {})["decisions"][0]
    assert same["verdict"] == "NO_EFFECT", same
    assert -5 < same["ci_pct"][0] < same["ci_pct"][1] < 5
    edge = decisions(plan, levels_for(plan, {"t1": 0.05}, sd=0.003), {})["decisions"][0]
    assert edge["verdict"] == "INCONCLUSIVE" and edge["ci_pct"][0] < 5 < edge["ci_pct"][1], edge


def test_a_guardrail_clearly_worse_rejects_a_treatment_its_metric_would_adopt() -> None:
    """Catches a guardrail's WORSE that is computed but not obeyed (or never computed): +50% throughput
    with TTFT doubled against a 10% margin is REJECT, and the same TTFT within margin is ADOPT."""
    guarded = make_plan(decide={
        "profiles": {"batch": {"concurrency": 8, "metric": "output_tok_s", "min_gain_pct": 5}},
        "guardrails": [{"metric": "ttft_ms.p50", "margin_pct": 10}],
    })  # fmt: skip
    levels = levels_for(guarded, {"t1": 0.5})
    with_ttft(levels, {"t1": 2.0})
    row = decisions(guarded, levels, {})["decisions"][0]
    (g,) = row["guardrails"]
    assert g["status"] == "WORSE" and g["ci_pct"][1] < -10 and row["ci_pct"][0] > 5, row
    assert row["verdict"] == "REJECT"
    with_ttft(levels, {"t1": 1.0})
    row = decisions(guarded, levels, {})["decisions"][0]
    assert row["guardrails"][0]["status"] == "NON_INFERIOR" and row["verdict"] == "ADOPT", row


def test_a_start_whose_capacity_search_found_nothing_is_not_dropped() -> None:
    """As ``capacity --starts``: a start below its lowest probe is a measurement, not a gap; the others alone
    would adopt, the decision is at most INCONCLUSIVE and names the start."""
    plan = make_plan(decide={"profiles": {"cap": {"metric": "capacity", "min_gain_pct": 5, "capacity": {
        "slo": "ttft_ms:500", "attainment": 0.9, "mode": "concurrency"}}}})  # fmt: skip
    key = plan.decide.profiles["cap"].key("cap")
    levels = {name: {SEARCH_LEVEL: side[8]} for name, side in levels_for(plan, {"t1": 0.5}).items()}
    for side in levels.values():
        for lv in side[SEARCH_LEVEL]:
            lv |= {"capacity": {"cap": lv["output_tok_s"]}, "capacity_reasons": {"cap": None},
                   "capacity_brackets": {"cap": [lv["output_tok_s"], lv["output_tok_s"] * 1.05]}}  # fmt: skip
    assert decisions(plan, levels, {}, {})["decisions"][0]["verdict"] == "ADOPT"
    gone = levels["t1"][SEARCH_LEVEL][1]
    gone |= {"capacity": {"cap": None}, "capacity_reasons": {"cap": "found no capacity: below its lowest probe, 2 users"}}
    d = decisions(plan, levels, {}, {})["decisions"][0]
    assert d["key"] == key and d["verdict"] == "INCONCLUSIVE" and d["holm"] is None, d
    assert any("below its lowest probe, 2 users" in r for r in d["excluded"])
    assert any("count as below their lowest probe, not as absent" in r for r in d["reasons"])
