"""Stage 6 from capacity rows as stage 5 leaves them: the candidate, replicas = ceil(peak / bound), GPUs, the
quota by Little's law, the cost, and whether the starts tell two candidates apart."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from tests.trial.plans import synthetic_plan

from seatrial.runs.summaries.base import Distribution
from seatrial.runs.summaries.capacity import Capacity, Probe, ProbeServer
from seatrial.trial.context import Outcome, TrialContext
from seatrial.trial.plan import TrialPlan
from seatrial.trial.stages.decision import run

E2E_MS, TOK_S = 400.0, 300.0


def _start(cap: float | None, upper: float | None, tok_s: float = TOK_S) -> dict[str, Any]:
    if cap is None:
        return {"start": 1, "capacity": None, "error": None, "startup_s": 1.0}
    bound = Capacity(mode="rate", rate_req_s=cap, upper_rate_req_s=upper, first_failing_rate_req_s=upper,
                     attainment_target=0.8, slo={"ttft_ms": 150},
                     confidence=0.9, found=True, stop_reason="bracket")  # fmt: skip
    probe = Probe(rate_req_s=cap, requests=60, good=58, attainment=0.97, attainment_ci=[0.9, 0.99], n_eff=60,
                  method="wilson", verdict="MEETS", valid=True, runs=1, levels=[0], ttft_ms=Distribution(),
                  tpot_ms=Distribution(), e2e_ms=Distribution(mean=E2E_MS), output_tok_s=tok_s,
                  achieved_rate_req_s=cap, mean_in_flight=1.0, missed_by={}, server=ProbeServer())  # fmt: skip
    return {"start": 1, "capacity": cap, "error": None, "startup_s": 1.0, "upper": upper,
            "bound": bound.model_dump(mode="json"), "probe": probe.model_dump(mode="json")}  # fmt: skip


def _row(bound: float | None, starts: list[tuple[float | None, float | None]], tok_s: float = TOK_S) -> dict[str, Any]:
    return {"capacity": bound, "below": None, "method": "t", "starts": [_start(c, u, tok_s) for c, u in starts],
            "line": f"{bound}"}  # fmt: skip


def _decide(rows: dict[str, dict[str, Any]], peak: float = 50.0, gpus: dict[str, int] | None = None) -> Outcome:
    plan = synthetic_plan(Path("/nonexistent"))
    plan["profiles"][0]["peak_req_s"] = peak
    for c in plan["candidates"]:
        c["gpus"] = (gpus or {}).get(c["name"], 1)
    ctx = TrialContext(TrialPlan.model_validate(plan), Path("/nonexistent/out"), Path("/nonexistent"))
    ctx.outcomes["capacity"] = Outcome("PASS", data={"rows": {k: {"chat": v} for k, v in rows.items()}})
    return run(ctx)


def test_the_profile_sizes_replicas_from_the_bound_and_quota_and_cost_from_the_slowest_start() -> None:
    got = _decide({"eight": _row(8.0, [(8.5, 9.0), (8.2, 8.6)]), "two": _row(2.0, [(2.1, 2.2), (2.05, 2.2)])})
    assert got.verdict == "PASS"
    (p,) = got.data["profiles"]
    assert p["candidate"] == "eight" and p["replicas"] == 7 == math.ceil(50 / 8.0) and p["gpus"] == 7
    # each replica takes 50/7 req/s; Little's law at the slowest start's mean E2E (0.4 s), rounded up
    assert p["concurrency_quota"] == math.ceil(50 / 7 * E2E_MS / 1000) == 3
    assert abs(p["usd_per_1m_output_tokens"] - 1 * 2.0 / (TOK_S * 3600) * 1e6) < 1e-9
    assert p["distinguishable_from"] == ["two"] and p["capacity_starts"] == 2
    assert {c["name"]: c["replicas"] for c in p["candidates"]} == {"eight": 7, "two": 25}


def test_a_peak_that_is_a_multiple_of_the_bound_takes_no_extra_replica() -> None:
    (p,) = _decide({"eight": _row(0.3, [(0.3, 0.4), (0.3, 0.4)])}, peak=2.1).data["profiles"]
    assert 2.1 / 0.3 > 7 and p["replicas"] == 7  # the float quotient is 7.000000000000001


def test_fewer_gpus_win_over_a_higher_capacity_per_replica() -> None:
    rows = {"eight": _row(8.0, [(8.5, 9.0), (8.2, 8.6)]), "two": _row(40.0, [(41, 42), (40.5, 42)])}
    (p,) = _decide(rows, gpus={"two": 4}).data["profiles"]  # two: 2 replicas x 4 GPUs = 8 > eight's 7
    assert p["candidate"] == "eight" and p["gpus"] == 7


def test_starts_that_do_not_tell_two_candidates_apart_are_said_with_both_names() -> None:
    # 8 and 6 against 8 and 8, each start's bracket [c, 1.25c): the interval of the ratio holds 1
    rows = {"eight": _row(7.0, [(8.0, 10.0), (8.0, 10.0)]), "two": _row(5.0, [(8.0, 10.0), (6.0, 7.5)])}
    (p,) = _decide(rows).data["profiles"]
    assert p["candidate"] == "eight" and p["distinguishable_from"] == []
    assert "eight and two are not distinguishable over their starts" in p["reason"]


def test_no_candidate_holding_the_slo_fails_the_decision_and_names_none() -> None:
    got = _decide({"eight": _row(None, [(None, None), (None, None)])})
    assert got.verdict == "FAIL" and got.exit_code == 1 and got.data["profiles"][0]["candidate"] is None


def test_a_tie_on_gpus_and_capacity_goes_to_the_cheaper_tokens_not_the_first_listed() -> None:
    rows = {"eight": _row(8.0, [(8.0, 9.0), (8.0, 9.0)], tok_s=200.0), "two": _row(8.0, [(8.0, 9.0), (8.0, 9.0)], tok_s=300.0)}
    (p,) = _decide(rows).data["profiles"]
    assert p["candidate"] == "two" and "floor" not in p["reason"]


def test_a_search_that_never_broke_the_slo_makes_the_capacity_a_floor_said_in_the_reason() -> None:
    (p,) = _decide({"eight": _row(8.0, [(8.0, None), (8.0, 9.0)])}).data["profiles"]
    assert "the search of start 1 ended before any probe was shown to break the SLO (none MISSED)" in p["reason"]
    assert "7 replicas is at most what the peak needs" in p["reason"]
