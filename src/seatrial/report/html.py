"""The run folder's ``report.html``: one self-contained page (inline CSS and SVG, no network).

Each capability contributes a *section*: a function from the run's ``summary.json`` to an HTML
fragment, or None when the summary has nothing for it. Sections live in ``report/sections/``; which
of them a page shows is chosen by the command that wrote the folder (``run.json``'s ``command``).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from seatrial.jsonio import write_bytes
from seatrial.report.jinja import template


def render_sections(summary: dict[str, Any], command: str | None) -> list[str]:
    """The HTML fragments of ``command``'s sections for ``summary`` (none where it has nothing for them)."""
    from seatrial.report.sections import sections_for

    return [frag for section in sections_for(command) if (frag := section(summary))]


def render_html(
    summary: dict[str, Any], title: str, run_info: dict[str, Any] | None = None, below: list[str] | None = None
) -> str:
    """The page; ``below``: fragments after its sections (a trial's stages' run folders)."""
    parts = render_sections(summary, (run_info or {}).get("command")) + (below or [])
    if not parts:
        parts = [f"<p>Nothing to report in this summary (keys: {html.escape(', '.join(summary))}).</p>"]
    return template("report.html.j2").render(title=title, sections=parts, run=run_info or {})


def write_report(run_dir: Path) -> Path:
    """Render ``run_dir/summary.json`` (and run.json when present) into ``run_dir/report.html``."""
    from seatrial.report.sections import nested_for
    from seatrial.runs.folder import read_run

    run_info, summary = read_run(run_dir)
    title = f"seatrial {run_info.get('command', 'report')} — {run_dir.name}"
    below = nested(run_dir, summary) if (nested := nested_for(run_info.get("command"))) else None
    out = run_dir / "report.html"
    return write_bytes(out, render_html(summary, title, run_info, below).encode())  # never through a planted link
