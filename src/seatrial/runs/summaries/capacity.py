"""``seatrial capacity``'s summary: every probe with its attainment interval and verdict (MEETS, MISSES,
INCONCLUSIVE, INVALID), the capacity found (the highest load that met the target: a lower bound) with the
first load that did not, what limited it, per GPU and per dollar, and the production profile."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seatrial.runs.summaries.base import Distribution, SummaryModel
from seatrial.runs.summaries.bench import LevelSummary, PlanCheck, SpanCounts

ProbeVerdict = Literal["MEETS", "MISSES", "INCONCLUSIVE", "INVALID"]


class ProbeServer(SummaryModel):
    """The server's view over a probe's runs: gauge maxima and counter sums (None: not measured)."""

    running_max: float | None = None
    waiting_max: float | None = None
    kv_cache_usage_max: float | None = None
    preemptions: float | None = None


class Probe(SummaryModel):
    """One load probed: its runs' measured requests pooled (``levels``: the bench levels of its runs)."""

    rate_req_s: float | None = None
    concurrency: int | None = None
    requests: int
    good: int
    attainment: float | None
    attainment_ci: list[float]
    n_eff: float
    method: str
    verdict: ProbeVerdict
    valid: bool
    invalid_reasons: list[str] = Field(default_factory=list)
    runs: int
    levels: list[int]
    ttft_ms: Distribution
    tpot_ms: Distribution
    e2e_ms: Distribution
    output_tok_s: float | None
    achieved_rate_req_s: float | None
    # of an INVALID probe in rate mode: the rate its client did send (its invalid runs' mean)
    delivered_rate_req_s: float | None = None
    mean_in_flight: float | None
    missed_by: dict[str, int]  # failed, and each SLO bound: requests that broke it
    server: ProbeServer
    overloaded: bool = False  # a run's queue kept growing (load.window): MISSES at once, whatever its share
    # the most it held in flight (client or server) and whether its last run was shorter than 10x that
    held_in_flight: float | None = None
    short: bool = False
    # of an INCONCLUSIVE probe: the requests its interval would need (at its design effect) to MEET
    needs_requests: int | None = None

    @property
    def load(self) -> float:
        return self.rate_req_s if self.rate_req_s is not None else float(self.concurrency or 0)


class Capacity(SummaryModel):
    mode: Literal["rate", "concurrency"]
    rate_req_s: float | None = None
    concurrency: int | None = None
    # the lowest load that MISSED (its attainment's upper bound below the target)
    first_failing_rate_req_s: float | None = None
    first_failing_concurrency: int | None = None
    # the bracket's upper end: the lowest load not shown to meet (MISSES, or INCONCLUSIVE at its most requests)
    upper_rate_req_s: float | None = None
    upper_concurrency: int | None = None
    output_tok_s: float | None = None
    attainment_target: float
    slo: dict[str, float]
    confidence: float
    found: bool
    stop_reason: str
    # "floor": no probe met down to --min-rate / --min-concurrency (the capacity is below it); "budget":
    # --time-budget was spent (the stop reason gives the bracket then); None: the search ran its course
    ended_early: Literal["floor", "budget"] | None = None

    @property
    def value(self) -> float | None:
        """The bound in the search's unit (req/s or users)."""
        return self.rate_req_s if self.mode == "rate" else self.concurrency

    @property
    def upper(self) -> float | None:
        return self.upper_rate_req_s if self.mode == "rate" else self.upper_concurrency


class Limit(SummaryModel):
    """What set the capacity: accept's saturation classes, judged at the first probe that did not meet."""

    classification: str
    reason: str


class PerGpu(SummaryModel):
    req_s: float | None
    output_tok_s: float | None


class Cost(SummaryModel):
    """USD per 1M output tokens at the capacity: ``usd_per_1m_output_tokens`` from its output tok/s, and
    ``_upper`` counting only tokens of good requests at the attainment's lower bound."""

    gpus: int
    gpu_hour_usd: float
    usd_per_1m_output_tokens: float | None
    usd_per_1m_output_tokens_upper: float | None


class ProductionProfile(SummaryModel):
    """Seed 004's production profile for the service's peak ``target_rate_req_s``."""

    target_rate_req_s: float
    layout: dict[str, int | None]
    max_num_seqs: int | None
    replica_capacity_req_s: float
    replicas: int
    gpus: int | None
    hourly_usd: float | None
    rate_per_replica_req_s: float
    concurrency_per_replica: float | None
    slo: dict[str, float]
    attainment_target: float
    method: str


class CapacitySummary(SummaryModel):
    capacity: Capacity
    probes: list[Probe]
    limit: Limit
    per_gpu: PerGpu | None = None
    cost: Cost | None = None
    profile: ProductionProfile | None = None
    levels: list[LevelSummary] = Field(default_factory=list)
    plan_check: PlanCheck | None = None
    spans: SpanCounts | None = None
    model: str | None = None
    workload: str | None = None
    notes: list[str] = Field(default_factory=list)

    def held(self) -> float | None:
        """The capacity found; None where the search found none or stopped on an INVALID probe."""
        c = self.capacity
        return c.value if c.found and not any(p.verdict == "INVALID" for p in self.probes) else None


class StartSearch(SummaryModel):
    """One fresh start's search (``capacity --serve --starts``): its capacity, or why it has none."""

    start: int
    seed: int  # its arrivals' seed
    folder: str | None = None  # its run folder, under the run's
    startup_s: float | None = None
    capacity: float | None = None  # the search's lower bound; None: it found none (below ``lowest``)
    lowest: float | None = None  # the lowest load it probed
    line: str = ""
    error: str | None = None  # the start was not measured (did not come up, a probe INVALID, ...)


class ReplicaCapacity(SummaryModel):
    """The capacity a fresh replica holds over fresh starts (capacity.replica)."""

    unit: str
    starts: list[StartSearch]
    capacity: float | None  # the lower prediction bound; None: see ``below`` and ``method``
    below: float | None = None  # a start found no capacity: a fresh replica's may be below this
    confidence: float
    method: str
    label: str  # "one start", or "N fresh starts"
