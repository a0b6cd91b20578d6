"""What every trial's configuration is (a profile's ``trials:`` entry, validated with unknown keys refused),
and the service-level objective the profile sets for all of them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TrialConfig(BaseModel):
    """The base of a trial's config model (and of every profile model): unknown keys are refused; a key
    may be spelled by its alias (``prefix-cache``) or its field name."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Slo(TrialConfig):
    """The service-level objective a step must meet, at the ``percentile``-th percentile."""

    ttft_ms: float = Field(2000.0, gt=0)
    itl_ms: float | None = Field(None, gt=0)
    percentile: float = Field(99.0, ge=50, lt=100)
