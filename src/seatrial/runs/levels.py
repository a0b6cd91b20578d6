"""The tables of a bench summary's levels, built once as text cells: the console (rich) and the report
(HTML) both show exactly these. A server gauge that no scrape covered while requests were in flight is
``n/a``, never 0; a missing latency is ``–``."""

from __future__ import annotations

from typing import Any

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


def level_label(level: dict[str, Any]) -> str:
    """How a summary level is named in tables: ``C=4`` (closed loop) or ``2/s`` (rate)."""
    return f"C={level['concurrency']}" if level.get("rate") is None else f"{level['rate']:g}/s"


def num(v: Any, fmt: str = "{:,.1f}", missing: str = "–") -> str:
    return missing if v is None else fmt.format(v)


def _gauge(v: Any, fmt: str) -> str:
    return num(v, fmt, "n/a")


def _row(lv: dict[str, Any]) -> list[str]:
    srv = lv["server"]
    ttft, tpot, itl, e2e = lv["ttft_ms"], lv["tpot_ms"], lv["itl_ms"], lv["e2e_ms"]
    scrapes = srv.get("in_flight_samples")
    valid = "yes" if lv["valid"] else "NO: " + "; ".join(lv["invalid_reasons"])
    return [
        level_label(lv), str(lv["requests_ok"]), str(lv["requests_failed"]), num(lv["output_tok_s"]),
        num(lv["per_user_output_tok_s"]), num(ttft["p50"]), num(ttft["p99"]), num(tpot["p50"]),
        num(itl["p50"]), num(itl["p99"]), num(e2e["p50"]), _gauge(srv.get("running_max"), "{:.0f}"),
        _gauge(srv.get("waiting_max"), "{:.0f}"), _gauge(srv.get("kv_cache_usage_max"), "{:.1%}"),
        "–" if scrapes is None else str(scrapes), valid,
    ]  # fmt: skip


def level_table(levels: list[dict[str, Any]]) -> Table:
    """One row per level (``scrapes``: /metrics samples taken while requests were in flight)."""
    return Table("Load levels", LEVEL_COLUMNS, [_row(lv) for lv in levels], [lv["valid"] for lv in levels])


def engine_means_shown(levels: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """The :data:`ENGINE_MEANS` that some level has (the engine exports that histogram); empty for none."""
    return [m for m in ENGINE_MEANS if any(f"{m[2]}_ms_mean" in lv["server"] for lv in levels)]


def engine_table(levels: list[dict[str, Any]]) -> Table | None:
    """Client-measured mean latencies beside the engine's own (its histograms over the same window):
    the difference is time spent outside the engine (API server, network, client). None when the
    engine exports no latency histograms."""
    shown = engine_means_shown(levels)
    if not shown:
        return None
    columns = ("level", *(f"{name} client / engine" for name, _, _ in shown), "engine requests")
    rows = []
    for lv in levels:
        srv = lv["server"]
        cells = [f"{num(lv[key].get('mean'))} / {num(srv.get(f'{h}_ms_mean'))}" for _, key, h in shown]
        counts = {srv.get(f"{h}_count") for _, _, h in shown} - {None}
        rows.append([level_label(lv), *cells, "/".join(str(c) for c in sorted(counts)) or "–"])
    return Table("Mean latency (ms): client / engine's own histograms", columns, rows, [True] * len(rows))


def level_notes(levels: list[dict[str, Any]]) -> list[str]:
    """The client's self-check notes and the level's own flags, one line per level that has any."""
    lines = []
    for lv in levels:
        notes = [n for n in ((lv.get("client_timing") or {}).get("note"), *lv.get("notes", [])) if n]
        if notes:
            lines.append(f"{level_label(lv)}: {'; '.join(notes)}")
    return lines
