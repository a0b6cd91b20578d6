"""One verdict module (issue 44 item 4): the words and what a run's verdicts add up to, read alike from a
trial's result and from its summary.json row."""

from __future__ import annotations

from seatrial.runs.result import TrialResult, read_trials
from seatrial.runs.verdicts import NOTHING_MEASURED_EXIT, Verdict, judge_run


def _trials() -> list[TrialResult]:
    return [
        TrialResult(name="health", verdict=Verdict.PASS, gpu=0),
        TrialResult(name="precision.fp8", verdict=Verdict.UNAVAILABLE, gpu=1, node="b",
                    reasons=["no FP8 kernels", "driver too old"]),
        TrialResult(name="burn", verdict=Verdict.UNSUPPORTED, reasons=["no GPU"]),
    ]  # fmt: skip


def test_a_result_and_its_summary_row_read_back_are_judged_alike() -> None:
    results = _trials()
    rows = [t.to_json() for t in results]
    bare = [{k: v for k, v in r.items() if k != "reason"} for r in rows]  # a row with its reasons only
    assert all("reasons" in r for r in bare)
    judged = judge_run(results, require=["precision"])
    assert judge_run(read_trials(rows), require=["precision"]) == judged == judge_run(read_trials(bare), require=["precision"])
    assert judged["not_measured"][0] == {"name": "precision.fp8", "gpu": 1, "verdict": "UNAVAILABLE",
                                         "reason": "no FP8 kernels; driver too old", "node": "b"}  # fmt: skip
    assert judged["missing_required"] == ["precision"] and not judged["passed"]
    assert judged["counts"] == {"PASS": 1, "UNAVAILABLE": 1, "UNSUPPORTED": 1}


def test_nothing_measured_is_its_own_exit_and_never_a_pass() -> None:
    judged = judge_run(read_trials(t.to_json() for t in _trials()[1:]))
    assert not judged["passed"] and judged["exit_code"] == NOTHING_MEASURED_EXIT
