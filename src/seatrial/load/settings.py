"""What ``seatrial bench`` takes besides the server's URL, spelled once: :class:`BenchSettings` supplies the
command line's options (names, help, defaults), validates an experiment plan's ``workload:`` and accept's
client settings; :meth:`seatrial.load.config.BenchConfig.from_settings` builds from it the typed
configuration a run uses.

A field's command-line flag is ``--`` and its name with dashes, unless its ``cli`` extra names another
(``timeout_s`` is ``--timeout``); list fields (``concurrency``) are written ``1,2,4`` on the command line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

EndpointName = Literal["completions", "chat"]  # the API a level sends to (load.client.Endpoint: where, how)
Stamps = Literal["kernel", "user"]
Arrival = Literal["poisson", "constant", "gamma"]
RampUp = Literal["linear", "exponential"]
TraceFormat = Literal["mooncake", "azure", "burstgpt", "jsonl"]


def _flag(name: str) -> dict[str, Any]:
    return {"cli": name}


def check_workload(name: str) -> str:
    from seatrial.load.workloads import WORKLOADS

    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}")
    return name


def check_listen(v: str | None) -> str | None:
    from seatrial.server.otlp import parse_listen

    if v is not None:
        parse_listen(v)
    return v


def parse_levels(v: Any) -> Any:
    """Concurrency levels as ``4``, ``[1, 2]`` or the command line's ``"1,2,4"``."""
    if isinstance(v, int):
        return [v]
    if isinstance(v, str):
        try:
            return [int(p) for p in v.split(",") if p.strip()]
        except ValueError:
            raise ValueError(f"{v!r}: expected integers like 1,2,4") from None
    return v


def parse_goodput(v: Any) -> Any:
    from seatrial.load.goodput import parse_slo

    return parse_slo(v)


def check_levels(v: list[int]) -> list[int]:
    if not v or any(c < 1 for c in v):
        raise ValueError("concurrency levels must be positive integers")
    return v


def check_ramp(kind: str | None, start: float | None, end: float | None, rate: float | None) -> None:
    """``--ramp-up`` needs both rates, 0 < R0 <= R1, and replaces ``--rate`` (as vLLM's ramp-up)."""
    if kind is None:
        if start is not None or end is not None:
            raise ValueError("--ramp-up-start/--ramp-up-end need --ramp-up linear|exponential")
        return
    if start is None or end is None:
        raise ValueError(f"--ramp-up {kind} needs --ramp-up-start R0 and --ramp-up-end R1 (requests/s)")
    if not 0 < start <= end:
        raise ValueError(f"--ramp-up: need 0 < R0 <= R1, got {start:g} and {end:g}")
    if rate is not None:
        raise ValueError("--ramp-up sets the rates; leave out --rate")


class ClientSettings(BaseModel):
    """How many client workers share each level: processes on this host, or Ray actors."""

    model_config = ConfigDict(extra="forbid")

    workers: int = Field(1, ge=1, le=256, description="Client processes on this host sharing each level")
    ray: str | None = Field(
        None, description="Ray cluster address: --clients actors on its seatrial_client nodes"
    )
    clients: int = Field(2, ge=1, le=4096, description="Ray client actors (with --ray)")


class BenchSettings(ClientSettings):
    """Every setting of a load run but the URL (see the module docstring)."""

    # the server
    model: str | None = Field(None, description="Model name; default: the server's first model")
    tokenizer: Path | None = Field(None, description="Local tokenizer.json or its folder")
    endpoint: EndpointName = Field("completions", description="completions|chat")
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the API key")
    metrics_url: str | None = Field(None, description="Prometheus endpoint; default URL/metrics")
    continuous_usage: bool = Field(
        False,
        description="Ask for usage in every chunk: exact tokens per chunk where the server puts several in one "
        "(speculative decoding), at a cost to the server (docs/metrics.md); without it, chunks that held "
        "several tokens are flagged in client_timing",
    )
    # the prompts
    workload: str = Field(
        "random", description="random|unique-code|shared-prefix|prefill|decode|mixed|file|trace|sessions"
    )
    input_len: int = Field(256, ge=1, description="Prompt tokens (server's count)")
    output_len: int = Field(64, ge=1, description="Output tokens per request")
    ignore_eos: bool | None = Field(
        None,
        description="Ask for exactly --output-len tokens; default: the workload's (every synthetic one does)",
        json_schema_extra=_flag("--ignore-eos/--no-ignore-eos"),
    )
    seed: int | None = Field(
        None, description="Workload seed; default: a new one per run, recorded in run.json (reproduces it)"
    )
    file: Path | None = Field(None, description="JSONL prompts for --workload file")
    prefix_len: int = Field(512, ge=1, description="shared-prefix: tokens per prefix")
    num_prefixes: int = Field(4, ge=1, description="shared-prefix: distinct prefixes")
    long_share: float = Field(0.2, ge=0.0, le=1.0, description="mixed: share of long-prefill requests")
    long_input_len: int = Field(2048, ge=1, description="mixed: prompt tokens of long requests")
    trace: Path | None = Field(None, description="trace: the trace file to replay (every line once)")
    trace_format: TraceFormat | None = Field(None, description="trace: mooncake|azure|burstgpt|jsonl")
    trace_block_tokens: int = Field(
        512, ge=1, description="trace: tokens per hash id; lengths scale by B/512 (16 fits a small model)"
    )
    speedup: float = Field(1.0, gt=0, description="trace: replay X times faster than recorded")
    trace_start: int = Field(0, ge=0, description="trace: first line to replay (0-based)")
    trace_limit: int | None = Field(None, ge=1, description="trace: lines to replay; default: to the end")
    sessions: int = Field(4, ge=1, description="sessions: conversations")
    turns: int = Field(3, ge=1, description="sessions: turns per conversation")
    think_time_ms: float = Field(
        0.0, ge=0, description="sessions: pause between an answer and the next turn, ms"
    )
    # the load
    concurrency: list[int] = Field([1], description="Closed-loop levels, e.g. 1,2,4,8")
    rate: float | None = Field(None, gt=0, description="Open-loop arrivals per second")
    max_concurrency: int | None = Field(None, ge=1, description="Cap on in-flight requests in an open loop (rate, ramp, trace)")
    arrival: Arrival = Field("poisson", description="poisson|constant|gamma (rate mode)")
    burstiness: float = Field(
        1.0, gt=0, description="gamma: shape K of the gaps (vLLM's): CV 1/sqrt(K), K < 1 burstier than Poisson"
    )
    ramp_up: RampUp | None = Field(None, description="linear|exponential: rates from R0 to R1 over a level")
    ramp_up_start: float | None = Field(None, gt=0, description="ramp-up: requests/s at the first request")
    ramp_up_end: float | None = Field(None, gt=0, description="ramp-up: requests/s at the last request")
    requests: int = Field(
        16, ge=1, description="Measured requests per level (trace: its lines; sessions: sessions x turns)"
    )
    warmup: int = Field(2, ge=0, description="Warm-up requests per level (excluded)")
    timeout_s: float = Field(
        600.0, gt=0, description="Per-request total timeout, s", json_schema_extra=_flag("--timeout")
    )
    stall_timeout_s: float = Field(
        120.0,
        gt=0,
        description="Fail a request after this long without data, s",
        json_schema_extra=_flag("--stall-timeout"),
    )
    max_error_rate: float = Field(
        0.0, ge=0.0, le=1.0, description="Errors above this share make a level invalid"
    )
    max_lag_ms: float = Field(50.0, gt=0, description="Closed loop: client lag p99 above this makes a level invalid")
    goodput: dict[str, float] | None = Field(
        None,
        description="SLO of a good request, e.g. ttft_ms:2000,tpot_ms:50[,e2e_ms:N]: each level reports the "
        "share of requests meeting every bound with its interval, and goodput (vLLM's --goodput meaning)",
        json_schema_extra={"cli": "--slo", "cli_aliases": ["--goodput"]},  # capacity's spelling
    )
    stamps: Stamps = Field(
        "kernel",
        description="Token times: 'kernel' (the kernel's receive time of each chunk) or 'user' (when the "
        "client reads it, as vLLM's benchmark client does)",
    )
    # beside the requests: the engine's spans, the GPUs, the plan
    otlp_listen: str | None = Field(
        None,
        description="Receive the engine's per-request spans (OTLP/HTTP protobuf) on HOST:PORT for the run and "
        "join them to the requests; vLLM exports there with --otlp-traces-endpoint http://HOST:PORT/v1/traces "
        "and OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf",
    )
    otlp_flush_s: float = Field(
        10.0,
        gt=0,
        le=600,
        description="After a level's last request, wait at most this long for its spans (vLLM exports every 5 s "
        "unless OTEL_BSP_SCHEDULE_DELAY says otherwise), s",
        json_schema_extra=_flag("--otlp-flush"),
    )
    gpu_telemetry: bool = Field(
        True,
        description="Sample every GPU in view (NVML here; with --ray, the nodes offering seatrial_gpu) at 10 Hz "
        "during each level: power, energy, clocks, throttling",
        json_schema_extra=_flag("--gpu-telemetry/--no-gpu-telemetry"),
    )
    plan: Path | None = Field(
        None, description="A `seatrial plan --json` file: its KV capacity is checked against the engine's own"
    )

    _listen = field_validator("otlp_listen")(classmethod(lambda cls, v: check_listen(v)))
    _workload = field_validator("workload")(classmethod(lambda cls, v: check_workload(v)))
    _parse = field_validator("concurrency", mode="before")(classmethod(lambda cls, v: parse_levels(v)))
    _check = field_validator("concurrency")(classmethod(lambda cls, v: check_levels(v)))
    _slo = field_validator("goodput", mode="before")(classmethod(lambda cls, v: parse_goodput(v)))

    @model_validator(mode="after")
    def _ramp(self) -> BenchSettings:
        check_ramp(self.ramp_up, self.ramp_up_start, self.ramp_up_end, self.rate)
        if (self.rate is not None or self.ramp_up is not None) and self.concurrency != [1]:
            raise ValueError(
                "--concurrency sets closed-loop levels, --rate/--ramp-up an open loop: give one (an open loop's "
                "cap on requests in flight is --max-concurrency)"
            )
        return self
