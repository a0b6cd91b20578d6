"""Hardware section: the ``seatrial hw`` verdict sheet (the rows the console prints), the GPUs, and
each GPU's burn telemetry."""

from __future__ import annotations

from typing import Any

from seatrial.runs.hwsheet import sheet_table
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import counts_line, judge_run

TELEMETRY_COLUMNS = (
    "t_s",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "gpu_temp_c",
    "hbm_temp_c",
    "power_w",
    "clock_event_reasons",
)


def _sheet(summary: dict[str, Any]) -> dict[str, Any] | None:
    if isinstance(summary.get("hw"), dict):  # a demo or combined summary
        return summary["hw"]
    if "gpus" in summary and "trials" in summary:  # a `seatrial hw` run folder
        return summary
    return None


def render_sheet(sheet: dict[str, Any]) -> str:
    """The hardware section of one verdict sheet as an HTML fragment (autoescaped)."""
    from seatrial.report.html import template

    trials = [TrialResult.model_validate(t) for t in sheet["trials"]]
    judged = judge_run(trials)
    burns = [{"gpu": t.gpu, "samples": t.evidence.get("samples", [])} for t in trials if t.name == "burn"]
    return template("hw_section.html.j2").render(
        gpus=sheet["gpus"],
        sheet=sheet_table(trials),
        burns=burns,
        columns=TELEMETRY_COLUMNS,
        verdicts={"passed": judged["passed"], "counts_line": counts_line(judged["counts"])},
    )


def section(summary: dict[str, Any]) -> str | None:
    if "nodes" in summary and "fleet" in summary:  # `seatrial hw --ray`: one sheet per node, the fleet view
        parts = [f"<h3>Node {n['node'][:12]} ({n.get('hostname')} {n.get('address')})</h3>{render_sheet(n)}"
                 for n in summary["nodes"]]  # fmt: skip
        fleet = [TrialResult.model_validate(t) for t in summary["fleet"]]
        if fleet:
            from seatrial.report.sections.bench import html_table

            parts.append(html_table(sheet_table(fleet), heading="h2"))
        return "<h2>Hardware across the fleet (seatrial hw --ray)</h2>" + "".join(parts)
    sheet = _sheet(summary)
    return None if sheet is None else render_sheet(sheet)
