"""Typed configuration of a load run, shared by ``seatrial bench``, trials and profile files."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path
from typing import Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from seatrial.runs.redact import redact_text

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
    # None: a new one per run (recorded in run.json), so a second run never re-sends the first one's
    # prompts into the server's prefix cache; give the recorded seed to reproduce a run exactly
    seed: int | None = None
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
        if self.seed is None:
            self.seed = secrets.randbelow(1 << 31)
        return self

    @property
    def nonce(self) -> str:
        """The run's nonce, put at the start of every prompt that is not built from the seed's random
        tokens (unique-code, file): one per run, shared by its requests."""
        return f"{self.seed:08x}"

    @property
    def shares_prefix(self) -> bool:
        """Whether the workload's prompts share prefixes on purpose (then prefix-cache hits are expected)."""
        return self.name in ("shared-prefix", "file")


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
    # several client workers share each level (load.distributed): processes here, or Ray actors
    workers: int = Field(1, ge=1, le=256)
    ray: str | None = None  # a Ray cluster's address: --clients actors on its seatrial_client nodes
    clients: int = Field(2, ge=1, le=4096)

    @field_validator("concurrency")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        if not v or any(c < 1 for c in v):
            raise ValueError("concurrency levels must be positive integers")
        return v


class ServerTarget(BaseModel):
    """Where the server is and how to talk to it. The API key is read from the environment, never stored;
    credentials written into the URL (``http://user:pw@host``) are taken out of it at once and sent as
    HTTP basic auth, so that the URL seatrial keeps, prints and writes holds none."""

    model_config = ConfigDict(extra="forbid")
    _basic_auth: tuple[str, str] | None = PrivateAttr(default=None)

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
            raise ValueError(f"--url must start with http:// or https://, got {redact_text(v)!r}")
        return v.removesuffix("/v1")

    @model_validator(mode="after")
    def _credentials_out_of_the_url(self) -> ServerTarget:
        parts = urlsplit(self.url)
        if parts.username is not None or parts.password is not None:
            self._basic_auth = (unquote(parts.username or ""), unquote(parts.password or ""))
            host = parts.netloc.rsplit("@", 1)[1]
            self.url = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
        if self.metrics_url:
            self.metrics_url = redact_text(self.metrics_url)
        return self

    def auth_headers(self) -> dict[str, str]:
        """``Authorization``: the API key from ``api_key_env`` (Bearer), else the URL's credentials
        (Basic), else nothing. Never written anywhere."""
        key = os.environ.get(self.api_key_env)
        if key:
            return {"Authorization": f"Bearer {key}"}
        if self._basic_auth is not None:
            token = base64.b64encode(":".join(self._basic_auth).encode()).decode()
            return {"Authorization": f"Basic {token}"}
        return {}

    @property
    def resolved_metrics_url(self) -> str:
        return self.metrics_url or f"{self.url}/metrics"


class BenchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: ServerTarget
    workload: WorkloadConfig = Field(default_factory=lambda: WorkloadConfig())
    load: LoadConfig = Field(default_factory=lambda: LoadConfig())
    allow_invalid: bool = False
