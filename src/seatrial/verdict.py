"""Verdict words shared by every trial. A verdict always carries the evidence it was drawn from; what a
run's verdicts add up to (passed, nothing measured) is ``seatrial.runs.judge_run``."""

from __future__ import annotations

from enum import Enum


class Verdict(str, Enum):
    PASS = "PASS"
    FAIL = "FAIL"
    UNSTABLE = "UNSTABLE"
    REVIEW_REQUIRED = "REVIEW_REQUIRED"
    UNSUPPORTED = "UNSUPPORTED"
    UNAVAILABLE = "UNAVAILABLE"
    INCONCLUSIVE = "INCONCLUSIVE"

    def __str__(self) -> str:
        return self.value
