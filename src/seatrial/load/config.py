"""Typed configuration of a load run, shared by ``seatrial bench``, trials and profile files."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

WorkloadName = Literal["random", "unique-code", "shared-prefix", "prefill", "decode", "mixed", "file"]
Endpoint = Literal["completions", "chat"]
Stamps = Literal["kernel", "user"]
Arrival = Literal["poisson", "constant"]


class WorkloadConfig(BaseModel):
    """What prompts to send. Lengths are in the server's tokens."""

    model_config = ConfigDict(extra="forbid")

    name: WorkloadName = "random"
    input_len: int = Field(256, ge=1)
    output_len: int = Field(64, ge=1)
    ignore_eos: bool = True
    seed: int = 0
    # shared-prefix: K prefixes of prefix_len tokens, each followed by questions of input_len tokens
    num_prefixes: int = Field(4, ge=1)
    prefix_len: int = Field(512, ge=1)
    # mixed: share of long-prefill requests among decode streams
    long_share: float = Field(0.2, ge=0.0, le=1.0)
    long_input_len: int = Field(2048, ge=1)
    long_output_len: int = Field(1, ge=1)
    file: Path | None = None

    @model_validator(mode="after")
    def _file_needs_path(self) -> WorkloadConfig:
        if self.name == "file" and self.file is None:
            raise ValueError("workload 'file' needs a JSONL path (--file)")
        return self


class LoadConfig(BaseModel):
    """How to offer load: a closed loop of ``concurrency`` users, or open-loop arrivals at ``rate``."""

    model_config = ConfigDict(extra="forbid")

    concurrency: list[int] = Field(default_factory=lambda: [1])
    rate: float | None = Field(None, gt=0)
    max_concurrency: int | None = Field(None, ge=1)
    arrival: Arrival = "poisson"
    requests: int = Field(16, ge=1)
    warmup: int = Field(2, ge=0)
    timeout_s: float = Field(600.0, gt=0)
    stall_timeout_s: float = Field(120.0, gt=0)
    max_error_rate: float = Field(0.0, ge=0.0, le=1.0)
    max_lag_ms: float = Field(50.0, gt=0)
    # 1 s: vLLM renders /metrics in its API-server process; 4 Hz scrapes cost a CPU engine ~10% throughput
    scrape_interval_s: float = Field(1.0, gt=0, le=1.0)
    # kernel: the kernel's receive time of each chunk; user: when the client reads it (as vLLM's client)
    stamps: Stamps = "kernel"

    @field_validator("concurrency")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or any(c < 1 for c in v):
            raise ValueError("concurrency levels must be positive integers")
        return v


class ServerTarget(BaseModel):
    """Where the server is and how to talk to it. The API key is read from the environment, never stored."""

    model_config = ConfigDict(extra="forbid")

    url: str
    model: str | None = None
    tokenizer: Path | None = None
    endpoint: Endpoint = "completions"
    api_key_env: str = "OPENAI_API_KEY"
    metrics_url: str | None = None
    # vLLM's continuous_usage_stats: exact tokens per chunk, at a cost in the server's API process that
    # slowed the engine itself (docs/metrics.md); off, as vLLM's benchmark asks, unless wanted
    continuous_usage: bool = False

    @field_validator("url")
    @classmethod
    def _strip(cls, v: str) -> str:
        v = v.rstrip("/")
        if not v.startswith(("http://", "https://")):
            raise ValueError(f"--url must start with http:// or https://, got {v!r}")
        return v.removesuffix("/v1")

    @property
    def resolved_metrics_url(self) -> str:
        return self.metrics_url or f"{self.url}/metrics"


class BenchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: ServerTarget
    workload: WorkloadConfig = Field(default_factory=lambda: WorkloadConfig())
    load: LoadConfig = Field(default_factory=lambda: LoadConfig())
    allow_invalid: bool = False
