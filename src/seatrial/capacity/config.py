"""What ``seatrial capacity`` searches for: the SLO, the attainment it must hold with what confidence, how
the load is offered (open-loop rate or closed-loop concurrency) and how finely, and what a GPU costs."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Mode = Literal["rate", "concurrency"]


class CapacityConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slo: dict[str, float] = Field(description="Bounds of a good request, e.g. ttft_ms:800,tpot_ms:40")
    attainment: float = Field(0.9, gt=0, lt=1, description="Share of requests that must be good")
    mode: Mode = Field("rate", description="rate (open-loop Poisson arrivals) or concurrency (closed loop)")
    confidence: float = Field(0.95, gt=0.5, lt=1, description="Confidence of each probe's interval")
    precision: float = Field(0.05, gt=0, lt=1, description="Stop when the bracket is this close (relative)")
    start: float | None = Field(None, gt=0, description="First probe (req/s or users); default 1")
    max_rate: float | None = Field(None, gt=0, description="Highest probe (req/s or users)")
    probe_requests: int | None = Field(
        None, ge=4, description="Measured requests of a probe's first run; default: enough for its interval"
    )
    max_probe_requests: int | None = Field(
        None, ge=4, description="Most requests one probe may take (INCONCLUSIVE ones get more); default 4x"
    )
    max_probes: int = Field(24, ge=1, description="Most probes of a search")
    gpus: int | None = Field(None, ge=1, description="GPUs of the deployment (default: the --plan's layout, TP x PP x DP)")
    gpu_hour_usd: float | None = Field(None, gt=0, description="Price of one GPU hour, USD")
    target_rate: float | None = Field(
        None, gt=0, description="The service's peak, req/s: a production profile (replicas, GPUs, cost)"
    )

    @field_validator("slo", mode="before")
    @classmethod
    def _slo(cls, v: object) -> object:
        from seatrial.load.goodput import parse_slo

        return parse_slo(v)  # type: ignore[arg-type]

    @model_validator(mode="after")
    def _bounds(self) -> CapacityConfig:
        if self.max_rate is not None and self.start is not None and self.max_rate < self.start:
            raise ValueError(f"max_rate {self.max_rate:g} is below the first probe {self.start:g}")
        if self.mode == "concurrency" and self.start is not None and self.start != int(self.start):
            raise ValueError("concurrency mode probes whole numbers of users: start must be an integer")
        return self

    @property
    def first(self) -> float:
        return self.start or 1.0
