"""What every summary model shares: unknown fields are refused (a typo in a writer is a bug), and the JSON
is the model's own dump."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

M = TypeVar("M", bound="SummaryModel")


class SummaryModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> dict[str, Any]:
        """The summary as ``summary.json`` holds it."""
        return self.model_dump(mode="json")

    @classmethod
    def part_of(cls: type[M], summary: dict[str, Any]) -> M:
        """This summary out of a larger one that holds its fields at the top level (the demo's)."""
        return cls.model_validate({k: v for k, v in summary.items() if k in cls.model_fields})


class Distribution(SummaryModel):
    """``{mean, p50, p90, p95, p99, max}`` of a latency over a level's ok requests (None: no value)."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None
