"""Typed configuration of a load run (what a run uses, and run.json's ``config``): the server
(:class:`ServerTarget`), the prompts (:class:`WorkloadConfig`), the load (:class:`LoadConfig`). Their
fields, defaults and limits are :class:`seatrial.load.settings.BenchSettings`' own, reused here, so
that the command line, experiment plans and trials cannot drift apart."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from seatrial.load.settings import (
    Arrival,
    BenchSettings,
    EndpointName,
    RampUp,
    Stamps,
    TraceFormat,
    check_levels,
    check_listen,
    check_ramp,
    check_workload,
    parse_goodput,
    parse_levels,
)
from seatrial.runs.redact import redact_text, remember

START_SEED_STRIDE = 1000  # seeds apart of fresh starts: a start's levels draw seed + level, never a next start's


def start_seed(base: int, start: int) -> int:
    """The seed of fresh start ``start`` (0, 1, ...) of a run whose seed is ``base`` (experiment's starts,
    capacity --starts): far enough apart that no level of one start replays a level of another."""
    return base + START_SEED_STRIDE * start


def _S(name: str) -> Any:
    """The one definition of setting ``name`` (default, limits, help), reused as a field here."""
    return BenchSettings.model_fields[name]


class WorkloadConfig(BaseModel):
    """What prompts to send. Lengths are in the server's tokens."""

    model_config = ConfigDict(extra="forbid")

    name: str = _S("workload")
    input_len: int = _S("input_len")
    output_len: int = _S("output_len")
    ignore_eos: bool = True
    # None: a new one per run (recorded in run.json), so a second run never re-sends the first one's
    # prompts into the server's prefix cache; give the recorded seed to reproduce a run exactly
    seed: int | None = _S("seed")
    # shared-prefix: K prefixes of prefix_len tokens, each followed by questions of input_len tokens
    num_prefixes: int = _S("num_prefixes")
    prefix_len: int = _S("prefix_len")
    # mixed: share of long-prefill requests among decode streams
    long_share: float = _S("long_share")
    long_input_len: int = _S("long_input_len")
    long_output_len: int = Field(1, ge=1)
    file: Path | None = _S("file")
    # trace: a recorded trace's lines, replayed at their times (load.workloads.traces)
    trace: Path | None = _S("trace")
    trace_format: TraceFormat | None = _S("trace_format")
    trace_block_tokens: int = _S("trace_block_tokens")
    speedup: float = _S("speedup")
    trace_start: int = _S("trace_start")
    trace_limit: int | None = _S("trace_limit")
    # sessions: conversations of turns, each turn after the previous answer and the think time
    sessions: int = _S("sessions")
    turns: int = _S("turns")
    think_time_ms: float = _S("think_time_ms")

    _known = field_validator("name")(classmethod(lambda cls, v: check_workload(v)))

    @model_validator(mode="after")
    def _file_needs_path(self) -> WorkloadConfig:
        if self.name == "file" and self.file is None:
            raise ValueError("workload 'file' needs a JSONL path (--file)")
        if self.name == "trace" and (self.trace is None or self.trace_format is None):
            raise ValueError("workload 'trace' needs --trace FILE and --trace-format mooncake|azure|burstgpt|jsonl")
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
        from seatrial.load.workloads import WORKLOADS

        return WORKLOADS[self.name].shares_prefix


class LoadConfig(BaseModel):
    """How to offer load: a closed loop of ``concurrency`` users, or open-loop arrivals at ``rate``."""

    model_config = ConfigDict(extra="forbid")

    concurrency: list[int] = _S("concurrency")
    rate: float | None = _S("rate")
    max_concurrency: int | None = _S("max_concurrency")
    arrival: Arrival = _S("arrival")
    burstiness: float = _S("burstiness")
    ramp_up: RampUp | None = _S("ramp_up")
    ramp_up_start: float | None = _S("ramp_up_start")
    ramp_up_end: float | None = _S("ramp_up_end")
    requests: int = _S("requests")
    warmup: int = _S("warmup")
    # the warm-up sent as the start of the measured level's own stream, not as a level of its own before it
    # (an open loop at a rate always leads: load.level.leads)
    warmup_leading: bool = False
    timeout_s: float = _S("timeout_s")
    stall_timeout_s: float = _S("stall_timeout_s")
    max_error_rate: float = _S("max_error_rate")
    max_lag_ms: float = _S("max_lag_ms")
    goodput: dict[str, float] | None = _S("goodput")
    # 1 s: vLLM renders /metrics in its API-server process; 4 Hz scrapes cost a CPU engine ~10% throughput
    scrape_interval_s: float = Field(1.0, gt=0, le=1.0)
    # kernel: the kernel's receive time of each chunk; user: when the client reads it (as vLLM's client)
    stamps: Stamps = _S("stamps")
    # several client workers share each level (load.distributed): processes here, or Ray actors
    workers: int = _S("workers")
    ray: str | None = _S("ray")  # a Ray cluster's address: --clients actors on its seatrial_client nodes
    clients: int = _S("clients")

    _parse = field_validator("concurrency", mode="before")(classmethod(lambda cls, v: parse_levels(v)))
    _check = field_validator("concurrency")(classmethod(lambda cls, v: check_levels(v)))
    _slo = field_validator("goodput", mode="before")(classmethod(lambda cls, v: parse_goodput(v)))

    @model_validator(mode="after")
    def _ramp(self) -> LoadConfig:
        check_ramp(self.ramp_up, self.ramp_up_start, self.ramp_up_end, self.rate)
        return self

    @property
    def open_loop(self) -> bool:
        return self.rate is not None or self.ramp_up is not None


def _checked_key(name: str) -> str | None:
    """The API key in environment variable ``name``: the default name may be unset (no key), a name the
    user chose must be set; a key an HTTP header cannot carry (CR, LF, other control characters) is
    refused. Messages name the variable, never the key."""
    key = os.environ.get(name)
    if key is None and name != BenchSettings.model_fields["api_key_env"].default:
        raise ValueError(f"--api-key-env: ${name} is not set in the environment")
    if key is not None and any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise ValueError(f"--api-key-env: ${name} holds a control character (CR, LF...): no HTTP header carries it")
    return key


class ServerTarget(BaseModel):
    """Where the server is and how to talk to it. The API key is read from the environment, never stored;
    credentials written into the URL (``http://user:pw@host``) are taken out of it at once and sent as
    HTTP basic auth, so that the URL seatrial keeps, prints and writes holds none."""

    model_config = ConfigDict(extra="forbid")
    _basic_auth: tuple[str, str] | None = PrivateAttr(default=None)

    url: str
    model: str | None = _S("model")
    tokenizer: Path | None = _S("tokenizer")
    endpoint: EndpointName = _S("endpoint")
    api_key_env: str = _S("api_key_env")
    metrics_url: str | None = _S("metrics_url")
    # vLLM's continuous_usage_stats: exact tokens per chunk, at a cost in the server's API process that
    # slowed the engine itself (docs/metrics.md); off, as vLLM's benchmark asks, unless wanted
    continuous_usage: bool = _S("continuous_usage")

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
            remember(basic=self._basic_auth)  # a server that echoes the Basic token writes it nowhere
        remember(_checked_key(self.api_key_env))
        if self.metrics_url:
            self.metrics_url = redact_text(self.metrics_url)
        return self

    def auth_headers(self) -> dict[str, str]:
        """``Authorization``: the API key from ``api_key_env`` (Bearer), else the URL's credentials
        (Basic), else nothing. Never written anywhere."""
        key = os.environ.get(self.api_key_env)
        if key:
            remember(key)
            return {"Authorization": f"Bearer {key}"}
        if self._basic_auth is not None:
            token = base64.b64encode(":".join(self._basic_auth).encode()).decode()
            return {"Authorization": f"Basic {token}"}
        return {}

    @property
    def resolved_metrics_url(self) -> str:
        return self.metrics_url or f"{self.url}/metrics"


class ObserveConfig(BaseModel):
    """What a run reads beside the requests: the engine's spans, the GPUs' telemetry, the plan it checks."""

    model_config = ConfigDict(extra="forbid")

    otlp_listen: str | None = _S("otlp_listen")
    otlp_flush_s: float = _S("otlp_flush_s")
    gpu_telemetry: bool = _S("gpu_telemetry")
    plan: Path | None = _S("plan")

    _listen = field_validator("otlp_listen")(classmethod(lambda cls, v: check_listen(v)))


class BenchConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target: ServerTarget
    workload: WorkloadConfig = Field(default_factory=lambda: WorkloadConfig())
    load: LoadConfig = Field(default_factory=lambda: LoadConfig())
    observe: ObserveConfig = Field(default_factory=lambda: ObserveConfig())
    allow_invalid: bool = False

    @model_validator(mode="after")
    def _timed_workloads_keep_their_times(self) -> BenchConfig:
        from seatrial.load.workloads import WORKLOADS

        if WORKLOADS[self.workload.name].timed and self.load.open_loop:
            raise ValueError(
                f"workload {self.workload.name!r} sends at its own times: leave out --rate and --ramp-up"
                + (" (--speedup scales a trace's times)" if self.workload.name == "trace" else "")
            )
        return self

    @classmethod
    def from_settings(
        cls, s: BenchSettings, url: str, seed: int | None = None, allow_invalid: bool = False
    ) -> BenchConfig:
        """The run's configuration from the flat settings: each field to its part; ``ignore_eos`` unset is
        the workload's own default; ``seed`` (an experiment's, shared by its starts) over the settings'."""
        from seatrial.load.workloads import WORKLOADS

        target = {k: getattr(s, k) for k in ServerTarget.model_fields if k != "url"}
        load = {k: getattr(s, k) for k in LoadConfig.model_fields if k in BenchSettings.model_fields}
        workload = {k: getattr(s, k) for k in WorkloadConfig.model_fields if k in BenchSettings.model_fields}
        observe = {k: getattr(s, k) for k in ObserveConfig.model_fields}
        eos = WORKLOADS[s.workload].ignore_eos if s.ignore_eos is None else s.ignore_eos
        workload |= {"name": s.workload, "ignore_eos": eos, "seed": s.seed if seed is None else seed}
        target["endpoint"] = WORKLOADS[s.workload].endpoint or s.endpoint
        return cls.model_validate(
            {"target": {"url": url, **target}, "workload": workload, "load": load, "observe": observe,
             "allow_invalid": allow_invalid}
        )
