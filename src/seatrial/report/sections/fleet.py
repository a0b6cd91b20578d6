"""Fleet section: a sync's destinations and their verification, and a doctor's item diff."""

from __future__ import annotations

import html
from typing import Any

from seatrial.report.sections.bench import html_table
from seatrial.runs.fleet import doctor_table, sync_table


def section(whole: dict[str, Any]) -> str | None:
    parts = []
    sync = whole if "destinations" in whole else whole.get("sync")
    if isinstance(sync, dict) and "destinations" in sync:
        parts += ["<h2>Sync</h2>", html_table(sync_table(sync))]
        notes = sync["plan"]["notes"]
        diffs = [f"{d['dest']}: {x}" for d in sync["destinations"] for x in d.get("differences", [])]
        if notes or diffs:
            parts.append("<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in [*notes, *diffs]) + "</ul>")
    doc = whole if "fingerprints" in whole else whole.get("doctor")
    if isinstance(doc, dict) and "fingerprints" in doc:
        parts += [
            "<h2>Doctor</h2>",
            f"<p class='meta'>passed: {doc['passed']}</p>",
            html_table(doctor_table(doc)),
        ]
        if doc["differences"]:
            parts.append(
                "<ul>"
                + "".join(f"<li class='bad'>{html.escape(d)}</li>" for d in doc["differences"])
                + "</ul>"
            )
    return "".join(parts) or None
