"""Stage 2 section: ``seatrial io``'s rows (the table the console prints) and what they add up to."""

from __future__ import annotations

import html

from seatrial.report.tables import html_table
from seatrial.runs.iotable import io_table
from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.io import IoSummary
from seatrial.runs.verdicts import counts_line, judge_run


def section(run: SummaryModel) -> str | None:
    if not isinstance(run, IoSummary):
        return None
    judged = judge_run([r.as_trial() for r in run.rows()])
    parts = ["<h2>Network / NVMe / storage (seatrial io)</h2>",
             f"<p class='meta'>{html.escape(counts_line(judged['counts']))}; {run.repeats} repeats per trial, "
             f"spread over {run.max_cv:.0%} is REVIEW_REQUIRED; nodes: {html.escape(', '.join(run.nodes))}</p>",
             html_table(io_table(run.results))]  # fmt: skip
    if run.fleet:
        parts.append(html_table(io_table(run.fleet, "fleet-relative (like nodes)"), heading="h3"))
    return "".join(parts)
