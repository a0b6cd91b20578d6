"""The tables of a capacity summary, built once as text cells for the console and the report: the
production profile (first, when asked for), the capacity with its cost line, and every probe."""

from __future__ import annotations

from seatrial.runs.levels import num
from seatrial.runs.summaries.capacity import CapacitySummary
from seatrial.runs.table import Table

PROBE_COLUMNS = ("load", "verdict", "attainment", "interval", "requests", "runs", "TTFT p50", "TTFT p99",
                 "TPOT p50", "TPOT p99", "out tok/s", "waiting max", "KV max", "missed by")  # fmt: skip


def _pct(v: float | None) -> str:
    return num(v, "{:.1%}")


def probe_table(s: CapacitySummary) -> Table:
    unit = "req/s" if s.capacity.mode == "rate" else "users"
    rows, ok = [], []
    for p in s.probes:
        lo, hi = p.attainment_ci
        missed = ", ".join(f"{k} {v}" for k, v in p.missed_by.items() if v)
        rows.append([
            f"{p.load:g} {unit}", p.verdict, _pct(p.attainment), f"[{lo:.1%}, {hi:.1%}]", str(p.requests),
            str(p.runs), num(p.ttft_ms.p50), num(p.ttft_ms.p99), num(p.tpot_ms.p50), num(p.tpot_ms.p99),
            num(p.output_tok_s), num(p.server.waiting_max, "{:.0f}", "n/a"),
            num(p.server.kv_cache_usage_max, "{:.1%}", "n/a"), missed or "–",
        ])  # fmt: skip
        ok.append(p.verdict == "MEETS")
    return Table("Probes", PROBE_COLUMNS, rows, ok)


def capacity_line(s: CapacitySummary) -> str:
    c = s.capacity
    slo = ", ".join(f"{k} <= {v:g}" for k, v in c.slo.items())
    rule = f"{c.attainment_target:.0%} of requests with {slo} (lower bound at {c.confidence:.0%} confidence)"
    if not c.found:
        lowest = min((p.load for p in s.probes), default=None)
        unit = "req/s" if c.mode == "rate" else "users"
        below = f" down to {lowest:g} {unit}: below it" if c.ended_early == "floor" and lowest is not None else ""
        return f"no capacity: no probe met {rule}{below}"
    load = f"{c.rate_req_s:g} req/s" if c.mode == "rate" else f"{c.concurrency} users"
    rate = c.mode == "rate"
    upper = c.upper_rate_req_s if rate else c.upper_concurrency
    failing = c.first_failing_rate_req_s if rate else c.first_failing_concurrency
    above = " (the time budget ended the search above it)" if c.ended_early == "budget" else " (no probe above it)"
    beyond = f", first load not shown to meet it {upper:g}" if upper is not None else above
    if failing is not None and failing != upper:
        beyond += f", first that missed it {failing:g}"
    return f"capacity {load}{beyond}: {rule}; {num(c.output_tok_s)} output tok/s there"


def capacity_table(s: CapacitySummary) -> Table:
    rows = [["capacity", capacity_line(s)], ["limited by", f"{s.limit.classification}: {s.limit.reason}"],
            ["search", s.capacity.stop_reason]]  # fmt: skip
    if s.per_gpu:
        rows.append(["per GPU", f"{num(s.per_gpu.req_s, '{:.3g}')} req/s, {num(s.per_gpu.output_tok_s)} output tok/s"])
    if s.cost:
        rows.append([
            "cost", f"{s.cost.gpus} GPU x ${s.cost.gpu_hour_usd:g}/h: ${num(s.cost.usd_per_1m_output_tokens, '{:,.3f}')} "
            f"per 1M output tokens (${num(s.cost.usd_per_1m_output_tokens_upper, '{:,.3f}')} per 1M tokens the SLO "
            "vouches for, at the attainment's lower bound)",
        ])  # fmt: skip
    rows += [["note", n] for n in s.notes]
    return Table("Capacity", ("", "value"), rows, [s.capacity.found] + [True] * (len(rows) - 1))


def profile_table(s: CapacitySummary) -> Table | None:
    p = s.profile
    if p is None:
        return None
    layout = " x ".join(f"{k.upper()} {v}" for k, v in p.layout.items() if v is not None) or "unknown (no --plan)"
    rows = [
        ["peak rate", f"{p.target_rate_req_s:g} req/s"],
        ["layout per replica", layout],
        ["max-num-seqs", "unknown (no --plan)" if p.max_num_seqs is None else str(p.max_num_seqs)],
        ["replica capacity", f"{p.replica_capacity_req_s:g} req/s (lower bound)"],
        ["replicas", str(p.replicas)],
        ["GPUs", "unknown" if p.gpus is None else str(p.gpus)],
        ["hourly cost", "–" if p.hourly_usd is None else f"${p.hourly_usd:,.2f}"],
        ["per replica", f"{p.rate_per_replica_req_s:.3g} req/s, about {num(p.concurrency_per_replica, '{:.1f}')} in flight"],
        ["SLO held", f"{p.attainment_target:.0%} of requests with " + ", ".join(f"{k} <= {v:g}" for k, v in p.slo.items())],
        ["method", p.method],
    ]  # fmt: skip
    return Table("Production profile", ("", "value"), rows, [True] * len(rows))


def capacity_tables(s: CapacitySummary) -> list[Table]:
    return [t for t in (profile_table(s), capacity_table(s), probe_table(s)) if t is not None]
