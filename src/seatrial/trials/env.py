"""What every trial runs with: the open server session, the profile, what the server told us, and
helpers to measure a level or send prepared requests with ``/metrics`` read around them."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from seatrial.load.client import send
from seatrial.load.config import BenchConfig, LoadConfig, ServerTarget, WorkloadConfig
from seatrial.load.level import LevelOutcome, NoProgress, Progress, Session, measure_level
from seatrial.load.pools import Pool
from seatrial.load.records import RequestRecord
from seatrial.load.scheduler import Delivery, LevelLoad, run_level
from seatrial.load.validity import check_refused
from seatrial.load.workloads import RequestSpec, random_specs
from seatrial.runs.folder import RunFolder
from seatrial.runs.summaries.bench import LevelSummary
from seatrial.trials.serverinfo import ServerInfo, Snapshot, snapshot

if TYPE_CHECKING:
    from seatrial.trials.profile import Profile

SCRAPE_INTERVAL_S = 0.2


@dataclass
class TrialEnv:
    session: Session
    target: ServerTarget
    profile: Profile
    info: ServerInfo
    folder: RunFolder | None = None
    progress: Progress = field(default_factory=NoProgress)
    index: int = 0
    seed: int = 0  # the run's: prompts differ between runs, so none is an earlier run's cache hit
    pool: Pool | None = None  # client workers that share each measured level (--workers, --ray)

    def next_index(self) -> int:
        self.index += 1
        return self.index

    def load_config(self, concurrency: int, requests: int, warmup: int) -> LoadConfig:
        p = self.profile
        return LoadConfig(
            concurrency=[concurrency],
            requests=requests,
            warmup=warmup,
            timeout_s=p.timeout_s,
            stall_timeout_s=p.stall_timeout_s,
            max_lag_ms=p.max_lag_ms,
            scrape_interval_s=SCRAPE_INTERVAL_S,
        )

    async def level(
        self, workload: WorkloadConfig, concurrency: int, requests: int, warmup: int = 0
    ) -> LevelOutcome:
        """One ``seatrial bench`` level (warm-up excluded, /metrics scraped and joined)."""
        load = self.load_config(concurrency, requests, warmup)
        workload = workload.model_copy(update={"seed": self.seed})
        cfg = BenchConfig(target=self.target, workload=workload, load=load)
        return await measure_level(
            self.session, cfg, LevelLoad(concurrency), self.next_index(), self.folder, self.progress, self.pool
        )

    async def specs(self, count: int, input_len: int, output_len: int, kind: str) -> list[RequestSpec]:
        """``count`` prompts of exactly ``input_len`` server tokens, different on every call."""
        rng = random.Random(self.seed * 1_000_003 + self.next_index() * 7919)
        return await random_specs(self.session.tokenizer, rng, count, input_len, output_len, kind, True)

    async def send_all(
        self, specs: list[RequestSpec], concurrency: int, tag: str
    ) -> tuple[list[RequestRecord], Delivery]:
        """Send prepared specs in a closed loop of ``concurrency`` users; records go to the run folder."""
        s = self.session

        async def sender(spec: RequestSpec, rec: RequestRecord) -> RequestRecord:
            return await send(s.http, s.endpoint, spec, rec)

        self.progress.level_start(tag, len(specs))
        records, delivery = await run_level(specs, LevelLoad(concurrency), "measure", tag, sender, self.keep)
        check_refused(records)
        return records, delivery

    def keep(self, rec: RequestRecord) -> None:
        """Store a record of a level and count it in the level's progress."""
        self.store(rec)
        self.progress.record(rec)

    def store(self, rec: RequestRecord) -> None:
        """Store a record sent outside a level (a probe, background load) in the run folder; with spans, its
        span finds it (counted as outside the levels, not as unmatched)."""
        if self.session.spans is not None:
            self.session.spans.sent(rec)
        if self.folder:
            self.folder.add_request(rec.to_json())

    async def snapshot(self) -> Snapshot:
        return await snapshot(self.session.http, self.session.metrics_url)


def ok_values(records: list[RequestRecord], attr: str) -> list[float]:
    """``attr`` (e.g. ``ttft_ms``) of the successful records that have it."""
    return [v for r in records if r.ok and (v := getattr(r, attr)) is not None]


def first_error(records: list[RequestRecord]) -> str | None:
    return next((r.error for r in records if r.error), None)


#: The fields of a level summary a trial's evidence keeps (``index``: its requests are L<index>-* in
#: requests.jsonl).
BRIEF = ("index", "concurrency", "requests_ok", "requests_failed", "output_tok_s", "ttft_ms", "itl_ms", "tpot_ms",
         "server", "valid", "invalid_reasons")  # fmt: skip


def brief(summary: LevelSummary) -> dict[str, Any]:
    """What a trial's evidence keeps of a level (:data:`BRIEF`), and what was observed beside it."""
    return summary.model_dump(mode="json", include=set(BRIEF)) | observed(summary)


def observed(summary: LevelSummary) -> dict[str, Any]:
    """The level's engine spans and GPU telemetry where they were read (without the power series)."""
    out: dict[str, Any] = {}
    if summary.server_timing is not None:
        out["server_timing"] = summary.server_timing.model_dump(mode="json")
    if summary.gpu_telemetry is not None:
        out["gpu_telemetry"] = summary.gpu_telemetry.model_dump(mode="json", exclude={"gpus": {"__all__": {"series"}}})
    return out
