"""A trial's outcome: a verdict, the reasons for it, the sample sizes behind it, and its evidence."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from seatrial.verdict import Verdict

Performance = Literal["LOW", "GOOD", "INCONCLUSIVE"]
Classification = Literal[
    "THROUGHPUT_PLATEAU", "QUEUE_SATURATION", "SLO_CLIFF", "KV_PRESSURE", "CLIENT_BOUND", "NONE"
]

OPTIONAL = (
    "functional",
    "performance",
    "classification",
    "max_executable_concurrency",
    "max_slo_concurrency",
)


class TrialResult(BaseModel):
    """``samples`` names every sample a verdict was drawn from with its size (requests, rounds...)."""

    name: str
    verdict: Verdict
    reasons: list[str] = Field(default_factory=list)
    samples: dict[str, int] = Field(default_factory=dict)
    functional: Verdict | None = None
    performance: Performance | None = None
    classification: Classification | None = None
    max_executable_concurrency: int | None = None
    max_slo_concurrency: int | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The summary.json entry; optional fields appear only where the trial sets them."""
        data = self.model_dump(mode="json")
        for key in OPTIONAL:
            if data[key] is None:
                del data[key]
        return data
