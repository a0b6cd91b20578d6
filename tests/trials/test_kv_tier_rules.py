"""kv-tier: when it cannot run, and its verdicts when it did (never a PASS without an offload tier)."""

from __future__ import annotations

from seatrial.runs.verdicts import Verdict
from seatrial.trials.kv_tier import against_baseline, judge, size_sessions


def test_plan_sizes_the_working_set_above_capacity() -> None:
    sessions, why = size_sessions(20_480, 1024, 1.5, 65_536)
    assert why is None and sessions == 30 and sessions * 1024 >= 1.5 * 20_480


def test_plan_unavailable_with_the_reason() -> None:
    assert size_sessions(None, 1024, 1.5, 65_536) == (0, size_sessions(None, 1, 1.5, 1)[1])
    assert "capacity unknown" in (size_sessions(None, 1024, 1.5, 65_536)[1] or "")
    sessions, why = size_sessions(1_048_576, 1024, 1.5, 65_536)
    assert sessions == 0 and why is not None and "1,572,864" in why and "65,536" in why


def test_no_offload_tier_is_unsupported_not_pass() -> None:
    v, why = judge(False, 0.0, 0.98, 1.1, 3)
    assert v is Verdict.UNSUPPORTED and "0.98x" in why


def test_offload_tier_verdicts() -> None:
    assert judge(True, 1e9, 0.3, 0.4, 19)[0] is Verdict.INCONCLUSIVE  # too few sessions to tell
    assert judge(True, 0.0, 0.3, 0.4, 20)[0] is Verdict.FAIL  # configured, counters never moved
    assert judge(True, 1e9, 0.9, 1.2, 20)[0] is Verdict.REVIEW_REQUIRED  # restore not clearly faster
    v, why = judge(True, 1e9, 0.3, 0.5, 20)
    assert v is Verdict.PASS and "0.30x" in why


def test_offload_pass_needs_to_beat_the_baseline_without_offload() -> None:
    assert against_baseline(Verdict.PASS, "ok", 0.5) == (
        Verdict.PASS,
        "ok; 0.50x the TTFT of the server without offload",
    )
    assert against_baseline(Verdict.PASS, "ok", 1.1)[0] is Verdict.REVIEW_REQUIRED
    assert against_baseline(Verdict.UNSUPPORTED, "no tier", 0.5) == (Verdict.UNSUPPORTED, "no tier")
