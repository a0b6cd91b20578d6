"""The tables of a bench summary's levels, built once as text cells: the console (rich) and the report
(HTML) both show exactly these. A server gauge that no scrape covered while requests were in flight is
``n/a``, never 0; a missing latency is ``–``."""

from __future__ import annotations

from seatrial.runs.summaries.bench import LevelSummary, PlanCheck, SpanCounts
from seatrial.runs.table import Table

#: The engine's own mean latencies joined per level: (name, the client's key, the server view's histogram).
ENGINE_MEANS = (
    ("TTFT", "ttft_ms", "ttft"),
    ("TPOT", "tpot_ms", "tpot"),
    ("ITL", "itl_ms", "itl"),
    ("E2E", "e2e_ms", "e2e"),
)
LEVEL_COLUMNS = (
    "level", "ok", "failed", "out tok/s", "per-user tok/s", "TTFT p50", "TTFT p99", "TPOT p50", "ITL p50",
    "ITL p99", "E2E p50", "running max", "waiting max", "KV max", "scrapes", "valid",
)  # fmt: skip


def num(v: float | int | None, fmt: str = "{:,.1f}", missing: str = "–") -> str:
    return missing if v is None else fmt.format(v)


def _gauge(v: float | None, fmt: str) -> str:
    return num(v, fmt, "n/a")


def _row(lv: LevelSummary) -> list[str]:
    srv = lv.server
    ttft, tpot, itl, e2e = lv.ttft_ms, lv.tpot_ms, lv.itl_ms, lv.e2e_ms
    valid = "yes" if lv.valid else "NO: " + "; ".join(lv.invalid_reasons)
    return [
        lv.label, str(lv.requests_ok), str(lv.requests_failed), num(lv.output_tok_s),
        num(lv.per_user_output_tok_s), num(ttft.p50), num(ttft.p99), num(tpot.p50),
        num(itl.p50), num(itl.p99), num(e2e.p50), _gauge(srv.running_max, "{:.0f}"),
        _gauge(srv.waiting_max, "{:.0f}"), _gauge(srv.kv_cache_usage_max, "{:.1%}"),
        str(srv.in_flight_samples), valid,
    ]  # fmt: skip


def level_table(levels: list[LevelSummary]) -> Table:
    """One row per level (``scrapes``: /metrics samples taken while requests were in flight)."""
    return Table("Load levels", LEVEL_COLUMNS, [_row(lv) for lv in levels], [lv.valid for lv in levels])


def _engine_mean(lv: LevelSummary, histogram: str) -> float | None:
    return getattr(lv.server, f"{histogram}_ms_mean")


def engine_means_shown(levels: list[LevelSummary]) -> list[tuple[str, str, str]]:
    """The :data:`ENGINE_MEANS` that some level has (the engine exports that histogram); empty for none."""
    return [m for m in ENGINE_MEANS if any(_engine_mean(lv, m[2]) is not None for lv in levels)]


def engine_table(levels: list[LevelSummary]) -> Table | None:
    """Client-measured mean latencies beside the engine's own (its histograms over the same window):
    the difference is time spent outside the engine (API server, network, client). None when the
    engine exports no latency histograms."""
    shown = engine_means_shown(levels)
    if not shown:
        return None
    columns = ("level", *(f"{name} client / engine" for name, _, _ in shown), "engine requests")
    rows = []
    for lv in levels:
        cells = [f"{num(lv.figure(key + '.mean'))} / {num(_engine_mean(lv, h))}" for _, key, h in shown]
        counts = {getattr(lv.server, f"{h}_count") for _, _, h in shown} - {None}
        rows.append([lv.label, *cells, "/".join(str(c) for c in sorted(counts)) or "–"])
    return Table("Mean latency (ms): client / engine's own histograms", columns, rows, [True] * len(rows))


def schedule_table(levels: list[LevelSummary]) -> Table | None:
    """Open-loop levels: the schedule's rate and burstiness against what was sent, the send lateness
    against its threshold (the cap's share of it), TTFA where answers came after reasoning, and a trace's
    prefix hits allowed beside the server's. None without an open-loop level."""
    open_levels = [lv for lv in levels if lv.lateness is not None]
    if not open_levels:
        return None
    columns = ("level", "arrival", "rate sched / sent", "CV sched / sent", "lateness p50 / p99 / max",
               "threshold", "cap wait p99", "TTFA p50", "prefix hits allowed / server")  # fmt: skip
    rows, ok = [], []
    for lv in open_levels:
        late, d, t = lv.lateness, lv.delivery, lv.trace
        assert late is not None
        shape = lv.schedule.arrival if lv.schedule else "–"
        hits = f"{num(t.prefix_hits_allowed, '{:,.0f}')} / {num(lv.server.prefix_cache_hits, '{:,.0f}')}" if t else "–"
        rows.append([
            lv.label, shape, f"{num(d.scheduled_rate, '{:.3g}')} / {num(d.achieved_rate, '{:.3g}')}",
            f"{num(d.scheduled_cv, '{:.2f}')} / {num(d.achieved_cv, '{:.2f}')}",
            f"{num(late.p50_ms)} / {num(late.p99_ms)} / {num(late.max_ms)}", num(late.threshold_ms),
            num(late.cap_wait_ms_p99), num(lv.ttfa_ms.p50), hits,
        ])  # fmt: skip
        ok.append(late.cause is None)
    return Table("Schedule kept (ms)", columns, rows, ok)


def turns_table(levels: list[LevelSummary]) -> Table | None:
    """Conversation levels: TTFT per turn (a growing prefix served from the cache keeps it flat)."""
    rows = [[lv.label, str(t.turn), str(t.requests_ok), num(t.prompt_tokens_mean, "{:,.0f}"), num(t.ttft_ms.p50),
             num(t.ttft_ms.p99), num(lv.server.prefix_cache_hits, "{:,.0f}")]
            for lv in levels if lv.sessions for t in lv.sessions.per_turn]  # fmt: skip
    if not rows:
        return None
    columns = ("level", "turn", "ok", "prompt tokens", "TTFT p50", "TTFT p99", "server prefix hits (level)")
    return Table("Conversations: TTFT per turn", columns, rows, [True] * len(rows))


def level_notes(levels: list[LevelSummary]) -> list[str]:
    """The client's self-check notes and the level's own flags, one line per level that has any."""
    lines = []
    for lv in levels:
        notes = [n for n in (lv.client_timing.note, *lv.notes) if n]
        if notes:
            lines.append(f"{lv.label}: {'; '.join(notes)}")
    return lines


SERVER_TIMING_COLUMNS = (
    "level", "joined", "queue p50", "queue p99", "prefill p50", "decode p50", "engine TTFT p50", "engine TTFT p99",
    "outside TTFT p50", "outside TTFT p99", "outside share p50", "engine > client",
)  # fmt: skip


def server_timing_table(levels: list[LevelSummary]) -> Table | None:
    """The engine's own phases per level from its spans (ms), and the time outside it (client TTFT − engine
    TTFT: network, HTTP server, client); None when no level asked for spans."""
    rows, ok = [], []
    for lv in levels:
        st = lv.server_timing
        if st is None:
            continue
        if st.status != "MEASURED":
            rows.append([lv.label, f"{st.status}: {st.reason}", *["–"] * (len(SERVER_TIMING_COLUMNS) - 2)])
            ok.append(False)
            continue
        q, p, d, t, o = st.queue_ms, st.prefill_ms, st.decode_ms, st.ttft_ms, st.network_client_ms
        rows.append([lv.label, f"{st.joined}/{st.requests}", num(q.p50), num(q.p99), num(p.p50), num(d.p50),
                     num(t.p50), num(t.p99), num(o.p50), num(o.p99), num(st.network_client_share.p50, "{:.1%}"),
                     str(st.server_exceeds_client)])  # fmt: skip
        ok.append(st.without_span == 0 and st.server_exceeds_client == 0)
    if not rows:
        return None
    return Table("Engine spans per level (ms)", SERVER_TIMING_COLUMNS, rows, ok)


def span_lines(spans: SpanCounts | None) -> list[str]:
    """The receiver's whole-run account: where every span went, and what was refused."""
    if spans is None:
        return []
    lines = [
        f"spans at {spans.endpoint}: {spans.spans} llm_request spans in {spans.posts} posts ({spans.other_spans} "
        f"of other names); joined {spans.joined}, warm-up {spans.warmup}, outside levels {spans.outside_levels}, "
        f"late {spans.late}, duplicates "
        f"{spans.duplicates}, other runs {spans.other_runs}, unmatched {spans.unmatched}; flush wait at most {spans.flush_bound_s:g} s per level"
    ]
    if spans.unmatched:
        lines.append(f"{spans.unmatched} spans match no request of this run, e.g. {', '.join(spans.unmatched_ids)}")
    if spans.other_runs:
        lines.append(f"{spans.other_runs} spans of another run (the engine carries this run's trace ids; theirs are "
                     f"others: an exporter still sending an earlier run's), e.g. {', '.join(spans.other_runs_ids)}")
    if spans.refused:
        lines.append(f"{spans.refused} posts refused, the last: {spans.last_refusal}")
    return lines


GPU_COLUMNS = ("level", "GPUs", "energy J", "J / output token", "power W mean", "power W max", "throttled", "source")


def gpu_table(levels: list[LevelSummary]) -> Table | None:
    """The GPUs in view per level: energy (counter, or power integral), per output token, power per GPU, the
    share of samples with a slowdown reason; None when no level sampled them."""
    rows, ok = [], []
    for lv in levels:
        g = lv.gpu_telemetry
        if g is None:
            continue
        if g.status != "MEASURED":
            rows.append([lv.label, f"{g.status}: {g.reason}", *["–"] * (len(GPU_COLUMNS) - 2)])
            ok.append(True)  # not a fault of the level: nothing to read
            continue
        rows.append([lv.label, str(len(g.gpus)), num(g.energy_j, "{:,.0f}"), num(g.joules_per_output_token, "{:,.3f}"),
                     num(g.power_w.mean), num(g.power_w.max), num(g.throttle_share, "{:.1%}"),
                     f"{g.source}, {g.energy_source}"])  # fmt: skip
        ok.append(not g.throttle_share)
    return Table("GPU telemetry per level", GPU_COLUMNS, rows, ok) if rows else None


def plan_check_line(check: PlanCheck) -> str:
    """The check in one sentence, for the console and the report."""
    head = (f"plan check {check.verdict}: planned {check.kv_tokens_planned:,} KV tokens per engine, engine "
            f"{check.kv_tokens_engine:,} ({check.engine_source}), {check.error_pct:+.2f}% "
            f"({'within' if check.verdict == 'PASS' else 'more than'} {check.tolerance_pct:g}%)"
            if check.kv_tokens_engine is not None else
            f"plan check {check.verdict}: {check.reason}")  # fmt: skip
    if check.kv_pressure_concurrency is not None:
        head += (f"; KV pressure began at C={check.kv_pressure_concurrency}, the plan's max concurrency is "
                 f"{check.max_concurrency_planned:.2f} at max_model_len")  # fmt: skip
    return head
