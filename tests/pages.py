"""A report page rendered the way ``seatrial report`` renders one: a run folder written with ``summary`` (and a
run.json naming ``command``), read back by the one reader, then rendered."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def page_of(folder: Path, summary: dict[str, Any], command: str | None = None) -> str:
    from seatrial.report.html import render_html
    from seatrial.runs.stored import read_run

    folder.mkdir(parents=True)
    if command is not None:
        (folder / "run.json").write_text(json.dumps({"command": command}))
    (folder / "summary.json").write_text(json.dumps(summary))
    return render_html(read_run(folder), "t")
