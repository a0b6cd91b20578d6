"""The one result model of every trial (accept, hw, experiment, doctor): a verdict, the reasons for it,
the sample sizes behind it, and the evidence it was drawn from.

JSON (``to_json``): ``{"name", "gpu", "verdict", "reason"?, "reasons", "samples", "evidence"}`` plus the
optional fields a trial sets (``functional``, ``performance``, ``classification``,
``max_executable_concurrency``, ``max_slo_concurrency``, ``node``). ``gpu`` is null for a trial that is
not about one GPU; ``reason`` (all reasons in one line) is present only when there is a reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from seatrial.runs.verdicts import Verdict

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
    "node",
)


class TrialResult(BaseModel):
    """``samples`` names every sample a verdict was drawn from with its size (requests, rounds...)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    verdict: Verdict
    reasons: list[str] = Field(default_factory=list)
    samples: dict[str, int] = Field(default_factory=dict)
    gpu: int | None = None
    node: str | None = None
    functional: Verdict | None = None
    performance: Performance | None = None
    classification: Classification | None = None
    max_executable_concurrency: int | None = None
    max_slo_concurrency: int | None = None
    evidence: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _one_reason(cls, data: Any) -> Any:
        """``reason="..."`` (one sentence, or None) is accepted for ``reasons=[...]``."""
        if isinstance(data, dict) and "reason" in data:
            data = dict(data)
            reason = data.pop("reason")
            data.setdefault("reasons", [reason] if reason else [])
        return data

    @property
    def reason(self) -> str | None:
        return "; ".join(self.reasons) if self.reasons else None

    @model_serializer(mode="wrap")
    def _row(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The summary.json row (also inside a summary model's dump): optional fields only where the trial
        sets them, ``reason`` only when there is one."""
        data = handler(self)
        for key in OPTIONAL:
            if data.get(key) is None:
                data.pop(key, None)
        row: dict[str, Any] = {"name": data.pop("name"), "gpu": data.pop("gpu"), "verdict": data.pop("verdict")}
        if self.reasons:
            row["reason"] = self.reason
        evidence = data.pop("evidence")
        return {**row, **data, "evidence": evidence}

    def to_json(self) -> dict[str, Any]:
        """The summary.json entry (see the module doc)."""
        return self.model_dump(mode="json")


def because(reason: str | None) -> list[str]:
    """``reasons`` from one sentence, or none."""
    return [reason] if reason else []


def read_trials(rows: Iterable[dict[str, Any]]) -> list[TrialResult]:
    """A summary.json's trial rows read back as results (what judging and the stages read)."""
    return [TrialResult.model_validate(r) for r in rows]
