"""The run folder's ``report.html``: one self-contained page (inline CSS and SVG, no network).

Each capability contributes a *section*: a function from the run's typed summary (read by
:func:`seatrial.runs.stored.read_run`) to an HTML fragment, or None when the summary has nothing for it. Sections live in ``report/sections/``; which
of them a page shows is chosen by the command that wrote the folder (``run.json``'s ``command``).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

from seatrial.jsonio import write_bytes
from seatrial.report.jinja import template

if TYPE_CHECKING:
    from seatrial.runs.stored import StoredRun
    from seatrial.runs.summaries.base import SummaryModel


def render_sections(summary: SummaryModel, command: str | None) -> list[str]:
    """The HTML fragments of ``command``'s sections for ``summary`` (none where it has nothing for them)."""
    from seatrial.report.sections import sections_for

    return [frag for section in sections_for(command) if (frag := section(summary))]


def folder_sections(folder: Path) -> list[str]:
    """The sections of a run folder inside another's (a trial's stage, a capacity search's start), read by the one
    reader."""
    from seatrial.runs.stored import read_run

    run = read_run(folder)
    return render_sections(run.summary, run.info.command)


def render_html(run: StoredRun, title: str, below: list[str] | None = None) -> str:
    """The page; ``below``: fragments after its sections (a trial's stages' run folders)."""
    parts = render_sections(run.summary, run.info.command) + (below or [])
    if not parts:
        keys = ", ".join(run.summary.model_dump())
        parts = [f"<p>Nothing to report in this summary (keys: {html.escape(keys)}).</p>"]
    return template("report.html.j2").render(title=title, sections=parts, run=run.info.model_dump(mode="json"))


def write_report(run_dir: Path) -> Path:
    """Render ``run_dir/summary.json`` (and run.json when present) into ``run_dir/report.html``."""
    from seatrial.report.sections import nested_for
    from seatrial.runs.stored import read_run

    run = read_run(run_dir)
    title = f"seatrial {run.info.command or 'report'} — {run_dir.name}"
    below = nested(run_dir, run.summary) if (nested := nested_for(run.info.command)) else None
    out = run_dir / "report.html"
    return write_bytes(out, render_html(run, title, below).encode())  # never through a planted link
