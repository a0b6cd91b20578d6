"""``seatrial capacity``: the highest load a running server carries within its SLO, as a lower bound.

Probes are bench levels on one HTTP session (and the client workers of ``--workers``/``--ray``), offered
open loop at a rate (Poisson arrivals, a leading warm-up of a quarter of the probe so the queue is in its
steady state) or closed loop at a concurrency; the search (capacity.search) ramps and bisects on each
probe's verdict (capacity.probe). Every run of every probe is a level of the run folder (requests.jsonl,
server_metrics.jsonl), and the summary is rewritten after each probe.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from seatrial.capacity.config import CapacityConfig
from seatrial.capacity.cost import cost, gpus_of, per_gpu, production_profile, read_layout
from seatrial.capacity.limits import limit
from seatrial.capacity.looks import Looks, first_run
from seatrial.capacity.probe import probe
from seatrial.capacity.search import Search
from seatrial.load.config import BenchConfig
from seatrial.load.level import LevelOutcome, NoProgress, Progress, Session, loaded, measure_level
from seatrial.load.plancheck import check_plan
from seatrial.load.pools import Pool
from seatrial.load.scheduler import LevelLoad
from seatrial.load.validity import starvation_note
from seatrial.runs.folder import RunFolder
from seatrial.runs.summaries.bench import PlanCheck, SpanCounts
from seatrial.runs.summaries.capacity import Capacity, CapacitySummary, Limit, Probe

Log = Callable[[str], None]
LEAD_SHARE = 0.25  # rate mode: the leading warm-up, as a share of the probe's measured requests


def _level_config(cfg: BenchConfig, ccfg: CapacityConfig, load: float, requests: int) -> BenchConfig:
    rate_mode = ccfg.mode == "rate"
    warmup = max(cfg.load.warmup, round(requests * LEAD_SHARE)) if rate_mode else cfg.load.warmup
    update = {
        "requests": requests, "warmup": warmup, "warmup_leading": rate_mode, "max_error_rate": 1.0,
        "goodput": ccfg.slo, "concurrency": [1 if rate_mode else round(load)],
        "rate": load if rate_mode else None, "max_concurrency": None, "arrival": "poisson",
    }  # fmt: skip
    return cfg.model_copy(update={"load": cfg.load.model_copy(update=update)})


class CapacityRun:
    def __init__(self, cfg: BenchConfig, ccfg: CapacityConfig, folder: RunFolder | None, log: Log,
                 progress: Progress) -> None:  # fmt: skip
        self.cfg, self.ccfg, self.folder, self.log, self.progress = cfg, ccfg, folder, log, progress
        self.summary: CapacitySummary | None = None
        self.probes: list[Probe] = []
        self.levels: list[LevelOutcome] = []
        self.plan_check: PlanCheck | None = None
        self.spans: SpanCounts | None = None

    async def run(self) -> CapacitySummary:
        observe = self.cfg.observe
        book = None
        try:
            async with loaded(self.cfg) as run:
                book, model = run.spans, run.session.model
                if observe.plan is not None:
                    self.plan_check = await check_plan(observe.plan, run.http, run.session.metrics_url, None)
                search = await self._search(run.session, run.pool)
        finally:
            self.spans = book.counts() if book is not None else None
        return self._write(search, model, final=True)

    async def _search(self, session: Session, pool: Pool | None) -> Search:
        c = self.ccfg
        first = c.probe_requests or first_run(c.attainment, c.confidence)
        most = c.max_probe_requests or 4 * first
        rate = c.mode == "rate"
        search = Search(c.first, c.precision, integer=not rate, max_load=c.max_rate, max_probes=c.max_probes,
                        unit="req/s" if rate else "users", floor=c.floor)  # fmt: skip
        budget = Budget(c.time_budget_s)

        async def run_level(at: float, requests: int) -> LevelOutcome:
            cfg = _level_config(self.cfg, c, at, requests)
            if not budget.fits((requests + cfg.load.warmup) / at if rate else closed_run_s(self.levels, at, requests)):
                raise OutOfTime
            index = len(self.levels)
            seed = (cfg.workload.seed or 0) + index
            level = LevelLoad(requests + cfg.load.warmup, at, "poisson", seed) if rate else LevelLoad(round(at))
            outcome = await measure_level(session, cfg, level, index, self.folder, self.progress, pool, True)
            self.levels.append(outcome)
            return outcome

        while (at := search.next_load()) is not None:
            try:
                looks = Looks(c.attainment, c.confidence, rate, first, most, in_flight=forecast(self.probes, at, rate),
                              fixed_budget=c.max_probe_requests is not None)  # fmt: skip
                p = await probe(run_level, at, c.slo, looks)
            except OutOfTime:  # a probe cut short is not judged: its runs stay levels of the folder
                search.out_of_time(budget.elapsed_s, budget.seconds or 0.0)
                self.log(f"search stopped: {search.stop_reason}")
                break
            self.probes.append(p)
            self.log(_line(p, c))
            if p.verdict == "INVALID":
                search.stop_reason = invalid_stop(p, search.lower, rate)
                break
            search.record(at, p.verdict == "MEETS")
            self._write(search, None, final=False)
        return search

    def _write(self, search: Search, model: str | None, final: bool) -> CapacitySummary:
        c = self.ccfg
        found = search.lower is not None
        at_cap = next((p for p in self.probes if found and p.load == search.lower and p.verdict == "MEETS"), None)
        rate = c.mode == "rate"
        failing = min((p.load for p in self.probes if p.verdict == "MISSES"), default=None)
        cap = Capacity(
            mode=c.mode,
            rate_req_s=search.lower if rate else None,
            concurrency=round(search.lower) if found and not rate and search.lower else None,
            first_failing_rate_req_s=failing if rate else None,
            first_failing_concurrency=round(failing) if failing is not None and not rate else None,
            upper_rate_req_s=search.upper if rate else None,
            upper_concurrency=round(search.upper) if search.upper is not None and not rate else None,
            output_tok_s=at_cap.output_tok_s if at_cap else None,
            attainment_target=c.attainment,
            slo=c.slo,
            confidence=c.confidence,
            found=found,
            stop_reason=search.stop_reason or ("searching" if not final else "stopped"),
            ended_early=search.early,
        )
        summary = CapacitySummary(
            capacity=cap, probes=self.probes, limit=limit(self.probes, search.lower, c.attainment) if final else _searching(),
            levels=[o.summary for o in self.levels], model=model, workload=self.cfg.workload.name,
            plan_check=self.plan_check, spans=self.spans,
        )  # fmt: skip
        if final and at_cap is not None:
            self._price(summary, at_cap)
        if final:
            waits = [(o.summary.client_timing.cpu_wait_ms, o.summary.duration_s) for o in self.levels]
            summary.notes += [n for n in (starvation_note(waits, self.cfg.target.url),) if n]
        if self.folder:
            self.folder.write_summary(summary)
        self.summary = summary
        return summary

    def _price(self, summary: CapacitySummary, at_cap: Probe) -> None:
        c = self.ccfg
        layout = read_layout(self.cfg.observe.plan)
        gpus = gpus_of(layout, c.gpus)
        if gpus is not None:
            summary.per_gpu = per_gpu(summary.capacity, at_cap, gpus)
            if c.gpu_hour_usd is not None:
                summary.cost = cost(at_cap, gpus, c.gpu_hour_usd)
        elif c.gpu_hour_usd is not None:
            summary.notes.append("--gpu-hour-usd without --gpus or a --plan's layout: no cost line")
        if c.target_rate is not None:
            summary.profile = production_profile(summary.capacity, at_cap, c.target_rate, layout, gpus,
                                                 c.gpu_hour_usd)  # fmt: skip


def forecast(probes: list[Probe], at: float, rate: bool) -> float:
    """Requests in flight expected at ``at``: its users in a closed loop; in an open loop what the nearest
    earlier probe that MET held, scaled by Little's law to this rate (a queue past its capacity holds more:
    the probe's own runs correct it; one that missed held a queue, no steady figure to scale)."""
    if not rate:
        return at
    seen = [(p.rate_req_s, p.held_in_flight) for p in probes
            if p.held_in_flight and p.rate_req_s and p.verdict == "MEETS"]  # fmt: skip
    if not seen:
        return 0.0
    near_rate, held = min(seen, key=lambda s: abs(math.log(at / s[0])))
    return held * at / near_rate


def closed_run_s(levels: list[LevelOutcome], users: float, requests: int) -> float:
    """How long a closed-loop run of ``requests`` at ``users`` is expected to last: the last level's
    seconds per request, scaled by its users over these (0 before any level)."""
    if not levels or not levels[-1].records or users <= 0:
        return 0.0
    last = levels[-1].summary
    return last.duration_s / len(levels[-1].records) * last.concurrency / users * requests


class OutOfTime(Exception):
    """The next run of a probe would not end within the search's time budget."""


class Budget:
    """The search's wall-time budget (None: none): whether a run of an expected length still fits."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds, self._t0 = seconds, time.monotonic()

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self._t0

    def fits(self, expected_s: float) -> bool:
        """False when the budget is spent, or a run expected to last ``expected_s`` would pass it."""
        return self.seconds is None or self.elapsed_s + expected_s <= self.seconds


def invalid_stop(p: Probe, lower: float | None, rate: bool) -> str:
    """Why the search stopped on an INVALID probe, with what is known: the load its client did deliver
    (rate mode) and the capacity found below it."""
    unit = "req/s" if rate else "users"
    known = f"the capacity is at least {lower:g} {unit}" if lower is not None else "no lower load met the target yet"
    sent = p.delivered_rate_req_s
    delivered = f"the client delivered {sent:.3g} req/s of the {p.load:g} asked; " if rate and sent else ""
    return f"the probe at {p.load:g} was INVALID twice: {delivered}{known}; {'; '.join(p.invalid_reasons)}"


def _searching() -> Limit:
    return Limit(classification="NONE", reason="search in progress")


def _line(p: Probe, c: CapacityConfig) -> str:
    lo, hi = p.attainment_ci
    unit = "req/s" if c.mode == "rate" else "users"
    att = "n/a" if p.attainment is None else f"{p.attainment:.1%}"
    return (
        f"probe {p.load:g} {unit}: {p.verdict}, attainment {att} [{lo:.1%}, {hi:.1%}] of {p.requests} requests "
        f"(target {c.attainment:.0%}, {p.runs} run{'s' if p.runs > 1 else ''})"
        + ("; overloaded: its queue kept growing" if p.overloaded else "")
        + (f"; to MEET at its design effect it needs about {p.needs_requests:,} requests (--max-probe-requests)"
           if p.needs_requests else "")
    )  # fmt: skip


async def run_capacity(
    cfg: BenchConfig, ccfg: CapacityConfig, folder: RunFolder | None = None, log: Log = print,
    progress: Progress | None = None,
) -> CapacitySummary:  # fmt: skip
    return await CapacityRun(cfg, ccfg, folder, log, progress or NoProgress()).run()
