"""Live console progress for load runs (rich), and the end-of-run level table."""

from __future__ import annotations

import time
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from seatrial.cli.common import console
from seatrial.load.metrics import engine_means_shown, level_label
from seatrial.load.records import RequestRecord


class LiveProgress:
    """One bar per level: done/total, output tok/s so far, errors."""

    def __init__(self) -> None:
        self._bar = Progress(
            TextColumn("[bold]{task.description:<22}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[tok_s]:>9} tok/s"),
            TextColumn("errors {task.fields[errors]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
            refresh_per_second=2,
            # No live bar (and no refresh thread competing with the load loop for the GIL) when
            # stderr is not a terminal; each level's result is printed when it ends instead.
            disable=not console.is_terminal,
        )
        self._task: Any = None
        self._t0 = time.perf_counter()
        self._tokens = 0
        self._errors = 0

    def __enter__(self) -> LiveProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def level_start(self, label: str, total: int) -> None:
        self._t0, self._tokens, self._errors = time.perf_counter(), 0, 0
        self._task = self._bar.add_task(label, total=total, tok_s="-", errors=0)

    def record(self, rec: RequestRecord) -> None:
        self._tokens += rec.output_tokens or 0
        self._errors += 0 if rec.ok else 1
        rate = self._tokens / max(1e-9, time.perf_counter() - self._t0)
        self._bar.update(self._task, advance=1, tok_s=f"{rate:,.1f}", errors=self._errors)

    def level_end(self, summary: dict[str, Any]) -> None:
        if not console.is_terminal:
            console.print(
                f"level C={summary['concurrency']}: {summary['requests_ok']} ok, {summary['requests_failed']} failed",
                highlight=False,
            )
        if not summary["valid"]:
            for reason in summary["invalid_reasons"]:
                console.print(f"  [red]INVALID[/] {reason}", highlight=False)
        if note := summary.get("client_timing", {}).get("note"):
            console.print(f"  [yellow]note[/] {note}", highlight=False)


def _ms(dist: dict[str, Any], key: str) -> str:
    v = dist.get(key)
    return "-" if v is None else f"{v:,.1f}"


def _num(v: Any, fmt: str = "{:,.1f}") -> str:
    return "-" if v is None else fmt.format(v)


def levels_table(levels: list[dict[str, Any]]) -> Table:
    table = Table(title="seatrial bench", header_style="bold")
    cols = [
        "level",
        "ok",
        "fail",
        "out tok/s",
        "user tok/s",
        "TTFT p50",
        "TTFT p99",
        "TPOT p50",
        "ITL p50",
        "ITL p99",
        "E2E p50",
        "run/wait max",
        "KV max",
        "valid",
    ]
    for col in cols:
        table.add_column(col, justify="right")
    for lv in levels:
        srv = lv["server"]
        table.add_row(
            level_label(lv),
            str(lv["requests_ok"]),
            str(lv["requests_failed"]),
            _num(lv["output_tok_s"]),
            _num(lv["per_user_output_tok_s"]),
            _ms(lv["ttft_ms"], "p50"),
            _ms(lv["ttft_ms"], "p99"),
            _ms(lv["tpot_ms"], "p50"),
            _ms(lv["itl_ms"], "p50"),
            _ms(lv["itl_ms"], "p99"),
            _ms(lv["e2e_ms"], "p50"),
            f"{_num(srv.get('running_max'), '{:.0f}')}/{_num(srv.get('waiting_max'), '{:.0f}')}",
            _num(srv.get("kv_cache_usage_max"), "{:.1%}"),
            "[green]yes[/]" if lv["valid"] else "[red]NO[/]",
        )
    return table


def engine_view_table(levels: list[dict[str, Any]]) -> Table | None:
    """Client-measured mean latencies beside the engine's own (its histograms over the same window):
    the difference is time spent outside the engine (API server, network, client). None when the
    engine exports no latency histograms."""
    shown = engine_means_shown(levels)
    if not shown:
        return None
    table = Table(title="Mean latency (ms): client / engine's own histograms", title_justify="left")
    table.add_column("level")
    for name, _, _ in shown:
        table.add_column(f"{name} client / engine", justify="right")
    table.add_column("engine requests", justify="right")
    for lv in levels:
        srv = lv["server"]
        cells = [f"{_num(lv[key].get('mean'))} / {_num(srv.get(f'{h}_ms_mean'))}" for _, key, h in shown]
        counts = {srv.get(f"{h}_count") for _, _, h in shown} - {None}
        table.add_row(level_label(lv), *cells, "/".join(str(c) for c in sorted(counts)) or "-")
    return table
