"""``seatrial bench``'s summary: one :class:`LevelSummary` per measured level (docs/metrics.md defines
every figure), the client workers when several shared the levels, and whether every level was valid."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from seatrial.runs.summaries.base import Distribution, SummaryModel


class ServerView(SummaryModel):
    """The engine's own view of a level from its ``/metrics`` (seatrial.server.scrape.summarize): gauge
    maxima over the scrapes taken while requests were in flight (None: no such scrape, or the engine lacks
    the gauge), counter deltas, and the engine's mean latencies over the requests it finished (``<h>_ms_mean``
    over ``<h>_count``; None where it has no such histogram)."""

    samples: int = 0
    in_flight_samples: int = 0
    scrape_failures: int = 0
    in_flight_scrape_hz: float | None = None
    scrape_filtered: bool | None = None
    running_max: float | None = None
    waiting_max: float | None = None
    in_system_mean: float | None = None  # running + waiting, mean over the scrapes while requests were in flight
    kv_cache_usage_max: float | None = None
    prefix_cache_queries: float | None = None
    prefix_cache_hits: float | None = None
    preemptions: float | None = None
    prompt_tokens: float | None = None
    generation_tokens: float | None = None
    ttft_ms_mean: float | None = None
    ttft_count: int | None = None
    itl_ms_mean: float | None = None
    itl_count: int | None = None
    tpot_ms_mean: float | None = None
    tpot_count: int | None = None
    e2e_ms_mean: float | None = None
    e2e_count: int | None = None
    queue_ms_mean: float | None = None
    queue_count: int | None = None
    # canonical gauges and counters that no scrape had (the engine does not export them) -> the reason; their
    # fields above are None, never 0
    unavailable: dict[str, str] = Field(default_factory=dict)


class DeliveryStats(SummaryModel):
    """How the offered load was delivered (seatrial.load.scheduler.Delivery); of an open loop, the rate
    and the coefficient of variation of the gaps, of the schedule and of what was sent, and what the sent
    ones may differ by (load.validity: the sent rate's shortfall, the gaps' squared CV's change)."""

    mean_in_flight: float = 0.0
    dispatch_window_s: float = 0.0
    scheduled_rate: float | None = None
    achieved_rate: float | None = None
    scheduled_cv: float | None = None
    achieved_cv: float | None = None
    rate_shortfall_allowed: float | None = None
    cv2_law: float | None = None  # the named arrival process's gaps' squared CV (None: a ramp, a trace)
    cv2_allowed: float | None = None  # the half-width of the band around it the sent gaps' must keep
    lag_ms_p99: float | None = None


class Lateness(SummaryModel):
    """Send lateness of an open-loop level (``sent_ms - scheduled_ms`` per request, load.validity.lateness):
    its p50, p99 and max; the part of it spent waiting for a free slot under ``--max-concurrency``
    (``cap_wait_ms``) and the rest (the client's own, ``client_ms_p99``); the threshold its p99 must keep,
    max(10 ms, one mean inter-arrival of the schedule); how many requests passed it, and the ``cause``
    when the p99 did (``max-concurrency`` or ``client``)."""

    p50_ms: float
    p99_ms: float
    max_ms: float
    cap_wait_ms_p99: float = 0.0
    cap_wait_ms_max: float = 0.0
    client_ms_p99: float = 0.0
    median_interarrival_ms: float | None = None
    mean_interarrival_ms: float | None = None
    threshold_ms: float
    late_requests: int = 0
    cause: str | None = None


class Schedule(SummaryModel):
    """How an open-loop level's send times were made: ``arrival`` poisson, constant or gamma (of shape
    ``burstiness``), with a ``ramp_up`` from ``ramp_up_start`` to ``ramp_up_end`` requests/s, or a timed
    workload's own (``trace``, ``sessions``)."""

    arrival: str
    burstiness: float | None = None
    ramp_up: str | None = None
    ramp_up_start: float | None = None
    ramp_up_end: float | None = None
    think_time_ms: float | None = None


class TraceStats(SummaryModel):
    """A replayed trace (load.workloads.traces): the lines sent (``first_line`` and on), their times
    divided by ``speedup``, lengths scaled by ``block_tokens``/512; the prefix-cache hit tokens its shared
    hash-id blocks allow at the engine's block size (``prefix_hits_allowed``; the server's own count is the
    level's ``server.prefix_cache_hits``); conversation turns, and how many of them went later than their
    trace time because the previous turn's answer was not back yet (``held_for_answer``)."""

    file: str
    format: str
    first_line: int
    lines: int
    speedup: float
    block_tokens: int
    span_s: float
    engine_block_size: int | None = None
    prefix_hits_allowed: int | None = None
    sessions: int = 0
    held_for_answer: int = 0


class TurnTiming(SummaryModel):
    """One turn (0-based) of a level's conversations: its ok requests, TTFT and mean prompt tokens."""

    turn: int
    requests_ok: int
    ttft_ms: Distribution = Field(default_factory=Distribution)
    prompt_tokens_mean: float | None = None


class SessionStats(SummaryModel):
    """A level of conversations: how many, and the TTFT per turn (a growing prefix should hit the cache:
    the level's ``server.prefix_cache_hits``)."""

    sessions: int
    turns: int
    per_turn: list[TurnTiming] = Field(default_factory=list)


class WorkerTiming(SummaryModel):
    """One client worker of a pooled level: its requests, loop lateness, CPU, clock, how late it began;
    ``died`` when it did not finish."""

    worker: int
    requests: int | None = None
    loop_lag_ms_p99: float | None = None
    loop_lag_ms_max: float | None = None
    cpu_wait_ms: float | None = None
    cpu_s: float | None = None
    start_late_ms: float | None = None
    clock_offset_ms: float | None = None
    rtt_ms: float | None = None
    where: str = ""
    died: str | None = None


class ClientTiming(SummaryModel):
    """How the level's token times were taken and whether the client kept up (load.metrics.client_timing),
    and what the load cost the client's CPU."""

    stamps: str | None = None
    read_lag_ms_p99: float | None = None
    merged_events: int = 0
    itl_per_chunk_requests: int = 0
    loop_lag_ms_p99: float | None = None
    loop_lag_ms_max: float | None = None
    cpu_wait_ms: float | None = None
    note: str | None = None
    cpu_s: float | None = None
    driver_cpu_s: float | None = None
    cpu_us_per_event: float | None = None
    workers: list[WorkerTiming] = Field(default_factory=list)


class Goodput(SummaryModel):
    """The requests that met the SLO (seatrial.load.goodput): ``attainment`` = good / total with its
    interval (``method``: plain or cluster-aware Wilson), and good requests and their output tokens per
    second of the level."""

    slo: dict[str, float]
    good: int
    total: int
    attainment: float | None
    attainment_ci: list[float]
    confidence: float
    method: str
    goodput_req_s: float | None
    goodput_output_tok_s: float | None


class ServerTiming(SummaryModel):
    """The engine's own timing of the level's measured requests, from the spans it exported
    (seatrial.load.spans; ``source`` spans) or stated in each answer (llama.cpp's ``timings``,
    seatrial.server.timings; ``source`` answer): how many were joined to their request (by request id, else
    by trace id), the engine's phases, and the time outside it (client TTFT − engine TTFT: network, HTTP
    server, client; from llama.cpp also the wait for a slot, which it does not time). ``tpot_ms``: the
    engine's time per output token after the first, where it states it (llama.cpp).
    ``status`` is MEASURED, or UNAVAILABLE with the ``reason`` (no span arrived at all)."""

    status: Literal["MEASURED", "UNAVAILABLE"]
    source: Literal["spans", "answer"] = "spans"
    reason: str | None = None
    requests: int = 0
    joined: int = 0
    joined_by_trace_id: int = 0
    without_span: int = 0
    flush_wait_s: float | None = None
    flush_bound_s: float | None = None
    queue_ms: Distribution = Field(default_factory=Distribution)
    prefill_ms: Distribution = Field(default_factory=Distribution)
    decode_ms: Distribution = Field(default_factory=Distribution)
    ttft_ms: Distribution = Field(default_factory=Distribution)
    e2e_ms: Distribution = Field(default_factory=Distribution)
    tpot_ms: Distribution = Field(default_factory=Distribution)
    network_client_ms: Distribution = Field(default_factory=Distribution)
    network_client_share: Distribution = Field(default_factory=Distribution)
    server_exceeds_client: int = 0


class PowerStats(SummaryModel):
    """Power per GPU over a level, W: the mean and the highest of the samples."""

    mean: float | None = None
    max: float | None = None


class PowerSeries(SummaryModel):
    """A GPU's sampled power over a level for the report's plot (seconds from the run's start; at most
    ``SERIES_POINTS`` points, every k-th sample)."""

    t_s: list[float] = Field(default_factory=list)
    power_w: list[float | None] = Field(default_factory=list)


class GpuLevel(SummaryModel):
    """One GPU over a level (seatrial.hw.energy): its energy counter's delta between the first and the last
    sample (``energy_counter_j``), the integral of its sampled power over the same span (``power_integral_j``,
    and of NVML's instant power reading, ``power_instant_integral_j``), power, clocks, utilisation, memory,
    temperature, the share of samples with a slowdown clock-event reason, and the fields NVML would not give."""

    node: str
    index: int
    name: str | None = None
    samples: int = 0
    span_s: float = 0.0
    energy_j: float | None = None
    energy_counter_j: float | None = None
    power_integral_j: float | None = None
    power_instant_integral_j: float | None = None
    power_w: PowerStats = Field(default_factory=PowerStats)
    sm_clock_mhz_mean: float | None = None
    mem_clock_mhz_mean: float | None = None
    utilization_gpu_pct_mean: float | None = None
    memory_used_gib_max: float | None = None
    gpu_temp_c_max: float | None = None
    throttle_share: float | None = None
    throttle_reasons: list[str] = Field(default_factory=list)
    unavailable: dict[str, str] = Field(default_factory=dict)
    series: PowerSeries = Field(default_factory=PowerSeries)


class GpuTelemetry(SummaryModel):
    """The GPUs in view over a level (``--gpu-telemetry``, 10 Hz): ``energy_j`` over all of them (each GPU's
    energy counter, or its power integral where it has no counter: ``energy_source``), per output token,
    ``power_w`` per GPU, ``throttle_share`` the share of all samples with a slowdown reason. ``status`` is
    MEASURED, or UNAVAILABLE with the ``reason`` (no GPU in view, no NVML)."""

    status: Literal["MEASURED", "UNAVAILABLE"]
    reason: str | None = None
    source: str = "nvml"
    hz: float = 10.0
    start_s: float | None = None
    window_s: float | None = None
    gpus: list[GpuLevel] = Field(default_factory=list)
    energy_j: float | None = None
    energy_source: str | None = None
    joules_per_output_token: float | None = None
    power_w: PowerStats = Field(default_factory=PowerStats)
    throttle_share: float | None = None
    notes: list[str] = Field(default_factory=list)


class LevelWindow(SummaryModel):
    """Where the level's steady state began, by its own data (load.window: MSER-5 on its TTFTs)."""

    transient: int = 0  # measured requests at the front the data showed were still the warm-up's transient
    excluded: int = 0  # of them, left out of the level's figures (a capacity probe's; other levels keep them)
    start_ms: float | None = None  # with some excluded: the first send the figures hold (requests' sent_ms)
    stationary: bool | None = None  # None: too few requests to tell
    overloaded: bool = False  # an open loop whose latency kept rising: the queue kept growing
    reason: str = ""
    in_flight: float | None = None  # the most it held in flight: client mean, or the server's running + waiting
    short: bool = False  # fewer measured requests than load.window.STEADY_MULTIPLE x in_flight


class LevelSummary(SummaryModel):
    """One measured level: throughput, latency distributions over ok requests, the server's view, the
    delivery, the client's self-checks, and validity with every reason."""

    index: int = 0
    concurrency: int
    rate: float | None = None
    requests_ok: int = 0
    requests_failed: int = 0
    duration_s: float = 0.0
    output_tokens: int = 0
    prompt_tokens: int = 0
    reasoning_tokens: int = 0
    answer_tokens: int = 0
    output_tok_s: float | None = None
    total_tok_s: float | None = None
    request_s: float | None = None
    per_user_output_tok_s: float | None = None
    ttft_ms: Distribution = Field(default_factory=Distribution)
    ttfa_ms: Distribution = Field(default_factory=Distribution)
    tpot_ms: Distribution = Field(default_factory=Distribution)
    itl_ms: Distribution = Field(default_factory=Distribution)
    e2e_ms: Distribution = Field(default_factory=Distribution)
    server: ServerView = Field(default_factory=ServerView)
    delivery: DeliveryStats = Field(default_factory=DeliveryStats)
    schedule: Schedule | None = None
    lateness: Lateness | None = None
    trace: TraceStats | None = None
    sessions: SessionStats | None = None
    client_timing: ClientTiming = Field(default_factory=ClientTiming)
    server_timing: ServerTiming | None = None
    gpu_telemetry: GpuTelemetry | None = None
    prompt_token_mismatches: int = 0
    goodput: Goodput | None = None
    window: LevelWindow | None = None
    valid: bool = True
    invalid_reasons: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    @property
    def label(self) -> str:
        """How the level is named in tables: ``C=4`` (closed loop), ``2/s`` (rate), ``ramp 1-8/s``,
        ``trace`` or ``sessions``."""
        sched = self.schedule
        if sched is not None and sched.arrival in ("trace", "sessions"):
            return sched.arrival
        if sched is not None and sched.ramp_up:
            return f"ramp {sched.ramp_up_start:g}-{sched.ramp_up_end:g}/s"
        return f"C={self.concurrency}" if self.rate is None else f"{self.rate:g}/s"

    def figure(self, name: str) -> Any:
        """A figure by its summary name: ``output_tok_s``, or ``ttft_ms.p99`` for a distribution's."""
        base, _, stat = name.partition(".")
        value = getattr(self, base)
        return getattr(value, stat) if stat else value


class ClientClock(SummaryModel):
    worker: int
    clock_offset_ms: float
    rtt_ms: float
    where: str = ""


class ClientPool(SummaryModel):
    """The client workers that shared every level (``--workers``, ``--ray``)."""

    workers: int
    ray: str | None = None
    clocks: list[ClientClock] = Field(default_factory=list)


class SpanCounts(SummaryModel):
    """The OTLP receiver over the whole run (``--otlp-listen``): what arrived, and where each span went:
    joined to a measured request, to a warm-up request, to a request sent outside a measured level (accept's
    probes), late (its request's level was already summarized), another run's (``other_runs``: the engine
    carries this run's trace ids and the span has none of them), or ``unmatched`` (no request of this run
    has its id; the first few ids in ``unmatched_ids``)."""

    endpoint: str
    flush_bound_s: float
    posts: int = 0
    spans: int = 0
    other_spans: int = 0
    refused: int = 0
    last_refusal: str | None = None
    joined: int = 0
    warmup: int = 0
    outside_levels: int = 0
    late: int = 0
    duplicates: int = 0
    other_runs: int = 0
    other_runs_ids: list[str] = Field(default_factory=list)
    unmatched: int = 0
    unmatched_ids: list[str] = Field(default_factory=list)


class PlanCheck(SummaryModel):
    """The plan's KV capacity (``seatrial plan --json``'s ``kv_cache_tokens``, per engine) against the engine's own
    (``engine_source`` says where it was read): PASS within ``tolerance_pct``, FAIL beyond, UNAVAILABLE with the
    ``reason`` when the engine states none. ``error_pct`` = (planned − engine) / engine x 100. Accept adds where
    its saturation ladder found KV pressure beginning, beside the plan's ``max_concurrency``."""

    plan: str
    kv_tokens_planned: int
    kv_tokens_engine: int | None = None
    error_pct: float | None = None
    verdict: Literal["PASS", "FAIL", "UNAVAILABLE"]
    reason: str | None = None
    engine_source: str | None = None
    tolerance_pct: float = 3.0
    max_concurrency_planned: float | None = None
    kv_pressure_concurrency: int | None = None


class BenchSummary(SummaryModel):
    levels: list[LevelSummary] = Field(default_factory=list)
    model: str | None = None
    endpoint: str | None = None
    workload: str | None = None
    clients: ClientPool | None = None
    spans: SpanCounts | None = None
    plan_check: PlanCheck | None = None
    valid: bool = False
    interrupted: bool = False
    notes: list[str] = Field(default_factory=list)  # the run's, said once (a client starved of CPU)
