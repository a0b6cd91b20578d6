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
    min_rate: float | None = Field(
        None, gt=0, description="Rate mode: lowest probe; not met there, the capacity is 'below' it (default: start / 16)"
    )
    min_concurrency: int | None = Field(
        None, ge=1, description="Concurrency mode: lowest probe; not met there, the capacity is 'below' it (default 1)"
    )
    time_budget: str | None = Field(
        None, description="Wall time the search may take (90s, 20m, 1h): then it ends with its bracket (exit 1)"
    )
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

    @field_validator("time_budget")
    @classmethod
    def _budget(cls, v: str | None) -> str | None:
        if v is not None:
            from seatrial.errors import ConfigError
            from seatrial.guard.config import parse_duration_s

            try:
                seconds = parse_duration_s(v, "--time-budget")
            except ConfigError as e:
                raise ValueError(str(e)) from None
            if seconds <= 0:
                raise ValueError("--time-budget must be positive")
        return v

    @model_validator(mode="after")
    def _bounds(self) -> CapacityConfig:
        if self.max_rate is not None and self.start is not None and self.max_rate < self.start:
            raise ValueError(f"max_rate {self.max_rate:g} is below the first probe {self.start:g}")
        if self.mode == "concurrency" and self.start is not None and self.start != int(self.start):
            raise ValueError("concurrency mode probes whole numbers of users: start must be an integer")
        floor, flag = (self.min_rate, "min_rate") if self.mode == "rate" else (self.min_concurrency, "min_concurrency")
        other = "min_concurrency" if self.mode == "rate" else "min_rate"
        if getattr(self, other) is not None:
            raise ValueError(f"{other} is for {'concurrency' if self.mode == 'rate' else 'rate'} mode; use {flag}")
        if floor is not None and floor > self.first:
            raise ValueError(f"{flag} {floor:g} is above the first probe {self.first:g}")
        return self

    @property
    def floor(self) -> float | None:
        """The lowest load the search may probe (None: its default)."""
        return self.min_rate if self.mode == "rate" else self.min_concurrency

    @property
    def time_budget_s(self) -> float | None:
        from seatrial.guard.config import parse_duration_s

        return None if self.time_budget is None else parse_duration_s(self.time_budget, "--time-budget")

    @property
    def first(self) -> float:
        return self.start or 1.0
