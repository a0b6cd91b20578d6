"""The hardware section of the shared HTML report: an HTML fragment rendered with jinja2.

``render_hw_section(report)`` returns a ``<section>`` that a full report page can include as is;
it carries its verdict sheet, GPU list and, for burn, a small telemetry table per GPU.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import jinja2

from seatrial.hw.models import HwReport
from seatrial.hw.summary import summarize

TEMPLATE = "hw_section.html.j2"
TELEMETRY_COLUMNS = (
    "t_s",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "gpu_temp_c",
    "hbm_temp_c",
    "power_w",
    "clock_event_reasons",
)


def _template() -> jinja2.Template:
    text = resources.files("seatrial.hw").joinpath("templates", TEMPLATE).read_text(encoding="utf-8")
    return jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(text)


def render_hw_section(report: HwReport) -> str:
    """The hardware section as an HTML fragment (autoescaped)."""
    template = _template()
    rows = [{"t": t, "summary": summarize(t)} for t in report.trials]
    burns: list[dict[str, Any]] = [
        {"gpu": t.gpu, "samples": t.evidence.get("samples", [])} for t in report.trials if t.name == "burn"
    ]
    return template.render(report=report, rows=rows, burns=burns, columns=TELEMETRY_COLUMNS)
