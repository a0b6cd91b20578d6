"""Fleet section: a sync's destinations and their verification, and a doctor's item diff (a sync or doctor
run folder; a trial's fleet stage holds one of each)."""

from __future__ import annotations

import html

from seatrial.report.tables import html_table
from seatrial.runs.fleet import doctor_table, sync_table
from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.fleet import DoctorSummary, SyncSummary


def _items(rows: list[str], css: str = "") -> str:
    cls = f" class='{css}'" if css else ""
    return "<ul>" + "".join(f"<li{cls}>{html.escape(x)}</li>" for x in rows) + "</ul>"


def sync_part(sync: SyncSummary) -> list[str]:
    parts = ["<h2>Sync</h2>", html_table(sync_table(sync))]
    diffs = [f"{d.dest}: {x}" for d in sync.destinations for x in d.differences]
    if sync.plan.notes or diffs:
        parts.append(_items([*sync.plan.notes, *diffs]))
    return parts


def doctor_part(doc: DoctorSummary) -> list[str]:
    parts = ["<h2>Doctor</h2>", f"<p class='meta'>passed: {doc.passed}</p>", html_table(doctor_table(doc))]
    if doc.differences:
        parts.append(_items(doc.differences, "bad"))
    return parts


def sync_section(summary: SummaryModel) -> str | None:
    return "".join(sync_part(summary)) if isinstance(summary, SyncSummary) else None


def doctor_section(summary: SummaryModel) -> str | None:
    return "".join(doctor_part(summary)) if isinstance(summary, DoctorSummary) else None

