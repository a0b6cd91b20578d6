"""Verdict words shared by every trial. A verdict always carries the evidence it was drawn from."""

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

    @property
    def ok(self) -> bool:
        """True when the verdict does not by itself make a run fail."""
        return self in (Verdict.PASS, Verdict.UNSUPPORTED, Verdict.UNAVAILABLE)

    def __str__(self) -> str:
        return self.value
