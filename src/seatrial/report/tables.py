"""A :class:`seatrial.runs.table.Table` as HTML, for every section."""

from __future__ import annotations

import html

from seatrial.runs.table import Table
from seatrial.runs.verdicts import Verdict

VERDICTS = {v.value for v in Verdict} | {"ADOPT", "REJECT", "NO_EFFECT", "IMPROVED", "REGRESSED", "MEETS", "MISSES", "INVALID"}


def _cell(text: str) -> str:
    """A cell; a verdict word carries its class (``v-PASS``...), coloured by the page's style."""
    word = f" class='v-{text}'" if text in VERDICTS else ""
    return f"<td{word}>{html.escape(text)}</td>"


def html_table(table: Table, *, heading: str = "h3") -> str:
    """The table with its title; rows not ok carry the class ``bad``."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in table.columns)
    rows = "".join(
        f"<tr{'' if ok else ' class=bad'}>" + "".join(_cell(c) for c in row) + "</tr>"
        for row, ok in zip(table.rows, table.ok, strict=True)
    )
    return f"<{heading}>{html.escape(table.title)}</{heading}><table><tr>{head}</tr>{rows}</table>"
