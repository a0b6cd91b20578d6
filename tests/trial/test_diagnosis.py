"""The cross-stage diagnosis over a trial folder: each symptom of stages 4-5 with the stage 0-2 evidence that
explains it or rules it out, and the file it was read from."""

from __future__ import annotations

from pathlib import Path

from tests.trial.plans import synthetic_plan

from seatrial.runs import TrialResult, record
from seatrial.runs.summaries.accept import AcceptSummary
from seatrial.runs.summaries.capacity import Capacity, CapacitySummary, Limit
from seatrial.trial.context import Outcome, TrialContext
from seatrial.trial.diagnosis import diagnose
from seatrial.trial.plan import TrialPlan


def _start(folder: Path, cls: str, reason: str) -> None:
    """A capacity start's run folder as the search writes it (its figures beside the point here)."""
    capacity = Capacity(mode="rate", rate_req_s=8.0, attainment_target=0.5, slo={"ttft_ms": 150.0}, confidence=0.9,
                        found=True, stop_reason="precision reached")  # fmt: skip
    record(folder, "capacity", {}, CapacitySummary(capacity=capacity, probes=[], limit=Limit(classification=cls, reason=reason)))


def _trial(tmp_path: Path, hardware: Outcome | None) -> TrialContext:
    ctx = TrialContext(TrialPlan.model_validate(synthetic_plan(tmp_path)), tmp_path, tmp_path)
    cap = ctx.folder("capacity")
    _start(cap / "two--chat" / "start-1", "QUEUE_SATURATION", "at 12: up to 9 waiting")
    _start(cap / "eight--chat" / "start-1", "KV_PRESSURE", "at 40: 12 preemptions")
    _start(cap / "eight--chat" / "start-2", "NONE", "every probe met the target")
    trials = [TrialResult(name="prefix-cache", verdict="FAIL", reasons=["hit rate 0.0%"]),
              TrialResult(name="context", verdict="PASS", reasons=["ok"]),
              # an engine without tool calls: not measured, no symptom (it was one: "accept tools UNSUPPORTED")
              TrialResult(name="tools", verdict="UNSUPPORTED", reasons=["the server has no tool parser"]),
              TrialResult(name="lora", verdict="UNAVAILABLE", reasons=["no adapter given"])]  # fmt: skip
    record(ctx.folder("serving") / "eight" / "accept", "accept", {}, AcceptSummary(url="http://x", scale="small", trials=trials))
    if hardware:
        ctx.outcomes["hardware"] = hardware
    ctx.outcomes["checkpoint"] = Outcome("PASS", data={"plans": {"eight": {"kv_cache_tokens": 21504, "max_concurrency": 21.0}}})
    ctx.outcomes["io"] = Outcome("PASS", data={"figures": {"local:storage.load": {"predicted_load_s": 2.5}}})
    ctx.outcomes["capacity"] = Outcome("PASS", data={"rows": {"eight": {"chat": {"starts": [
        {"start": 1, "startup_s": 95.0}, {"start": 2, "startup_s": 4.0}]}}}})  # fmt: skip
    return ctx


def test_each_symptom_comes_with_its_evidence_and_source(tmp_path: Path) -> None:
    ok = Outcome("PASS", data={"verdicts": {"gemm@0": "PASS", "memory-bandwidth@0": "PASS"}})
    found = diagnose(_trial(tmp_path, ok))
    rows = {r.source: r for r in found}
    queue = rows["5-capacity/two--chat/start-1/summary.json"]
    assert queue.symptom.startswith("TTFT high: requests queue") and "up to 9 waiting" in queue.symptom
    assert queue.evidence == ("hardware (1-hardware/summary.json): 2 trials passed, no throttle or fault; "
                              "suspect scheduling (max-num-seqs)")  # fmt: skip
    kv = rows["5-capacity/eight--chat/start-1/summary.json"]
    assert kv.symptom.startswith("KV pressure") and "21,504 KV tokens" in kv.evidence and "0-checkpoint" in kv.evidence
    assert "5-capacity/eight--chat/start-2/summary.json" not in rows  # NONE: no symptom
    prefix = rows["4-serving/eight/accept/summary.json"]
    assert prefix.symptom == "prefix hits 0 (eight: hit rate 0.0%)"
    slow = rows["5-capacity/eight--chat/summary.json"]
    assert slow.symptom == "start-up 95 s (eight start 1)" and "predicts 2.5 s" in slow.evidence
    assert len(found) == 4  # the 4 s start is no symptom, nor a trial not measured


def test_a_failed_gpu_is_suspected_first_and_an_unmeasured_one_is_not_ruled_out(tmp_path: Path) -> None:
    bad = Outcome("FAIL", data={"verdicts": {"memory-bandwidth@1": "FAIL", "gemm@0": "PASS"}})
    queue = next(r for r in diagnose(_trial(tmp_path / "bad", bad)) if "two--chat" in r.source)
    assert queue.evidence == "hardware (1-hardware/summary.json): memory-bandwidth@1 FAIL: suspect the GPU first"
    for i, hw in enumerate((None, Outcome("UNAVAILABLE", "no GPU found"))):
        queue = next(r for r in diagnose(_trial(tmp_path / str(i), hw)) if "two--chat" in r.source)
        assert "cannot rule it out" in queue.evidence and "suspect scheduling" in queue.evidence


def test_a_gpu_trial_the_card_does_not_support_is_no_suspect(tmp_path: Path) -> None:
    """On a lent H100 the diagnosis read fp4's UNSUPPORTED (Hopper has no FP4) as "suspect the GPU first"."""
    sheet = Outcome("PASS", data={"verdicts": {"gemm@0": "PASS", "precision.fp4@0": "UNSUPPORTED", "dcgm": "UNAVAILABLE"}})
    queue = next(r for r in diagnose(_trial(tmp_path, sheet)) if "two--chat" in r.source)
    assert queue.evidence == ("hardware (1-hardware/summary.json): 1 trials passed, 2 not measured, no throttle or fault; "
                              "suspect scheduling (max-num-seqs)")  # fmt: skip
