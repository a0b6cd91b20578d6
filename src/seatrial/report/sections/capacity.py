"""Capacity section: the production profile, the capacity and its cost line, attainment against load with
each probe's interval (the target line, the capacity marked), TTFT and TPOT per probe, every probe; for a search
over fresh starts (``capacity --starts N``) the replica's bound and each start's figure, then each start's
own page (:func:`start_pages`)."""

from __future__ import annotations

import html
from pathlib import Path

from seatrial.report.plots import intervals_svg, line_svg
from seatrial.report.tables import html_table
from seatrial.runs.capacity import capacity_tables
from seatrial.runs.levels import level_table
from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.capacity import CapacitySummary, ReplicaCapacity


def _plots(s: CapacitySummary) -> str:
    probes = sorted(s.probes, key=lambda p: p.load)
    if not probes:
        return ""
    unit = "req/s" if s.capacity.mode == "rate" else "users"
    x = [p.load for p in probes]
    marked = s.capacity.rate_req_s if s.capacity.mode == "rate" else s.capacity.concurrency
    plots = [
        intervals_svg(
            x, [p.attainment for p in probes], [p.attainment_ci[0] for p in probes],
            [p.attainment_ci[1] for p in probes], title="SLO attainment against load", xlabel=unit,
            ylabel="share of good requests", target=s.capacity.attainment_target, marked=marked,
            labels=[p.verdict for p in probes],
        ),
        line_svg(x, {f"TTFT {q}": [getattr(p.ttft_ms, q) for p in probes] for q in ("p50", "p99")},
                 title="TTFT per probe", xlabel=unit, ylabel="ms"),
        line_svg(x, {f"TPOT {q}": [getattr(p.tpot_ms, q) for p in probes] for q in ("p50", "p99")},
                 title="TPOT per probe", xlabel=unit, ylabel="ms"),
    ]  # fmt: skip
    return f"<div class='plots'>{''.join(plots)}</div>"


def section(s: SummaryModel) -> str | None:
    if not isinstance(s, CapacitySummary):  # a capacity run over several starts: its starts' folders have the probes
        return None
    tables = "".join(html_table(t) for t in capacity_tables(s))
    levels = html_table(level_table(s.levels)) if s.levels else ""
    return f"<h2>Capacity</h2>{tables}{_plots(s)}<h3>Every run of every probe</h3>{levels}"


def replica_section(r: SummaryModel) -> str | None:
    """The capacity a fresh replica holds over its starts, and every start's search (never one dropped)."""
    if not isinstance(r, ReplicaCapacity):
        return None
    if r.capacity is not None:
        head = f"{r.capacity:.4g} {r.unit}"
    else:
        head = "none" + (f": below {r.below:g} {r.unit}" if r.below is not None else "")
    rows = "".join(
        f"<tr><td>{s.start}</td><td>{s.seed}</td><td>{'—' if s.startup_s is None else f'{s.startup_s:.1f}'}</td>"
        f"<td>{'—' if s.capacity is None else f'{s.capacity:.4g}'}</td><td class='l'>{html.escape(s.error or s.line)}</td>"
        f"<td class='l'>{html.escape(s.folder or '')}</td></tr>"
        for s in r.starts
    )
    table = ("<table><tr><th>start</th><th>seed</th><th>ready s</th><th>capacity</th><th class='l'>search</th>"
             f"<th class='l'>folder</th></tr>{rows}</table>")  # fmt: skip
    meta = f"{html.escape(r.label)}; {html.escape(r.method)}"
    return f"<h2>Capacity of a fresh replica: {html.escape(head)}</h2><p class='meta'>{meta}</p>{table}"


def start_pages(run_dir: Path, r: SummaryModel) -> list[str]:
    """Each start's own capacity page under a search over fresh starts (none for a one-start search)."""
    from seatrial.report.html import folder_sections

    parts: list[str] = []
    for s in r.starts if isinstance(r, ReplicaCapacity) else []:
        if s.folder and (run_dir / s.folder / "summary.json").is_file():
            parts += [f"<h2>Start {s.start}</h2>", *folder_sections(run_dir / s.folder)]
    return parts
