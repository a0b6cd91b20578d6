"""Hardware section: the ``seatrial hw`` verdict sheet (the rows the console prints), the GPUs, and
each GPU's burn telemetry."""

from __future__ import annotations

from seatrial.runs.hwsheet import sheet_table
from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.hw import HwFleetSummary, HwNode, HwSummary
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


def render_sheet(sheet: HwSummary | HwNode) -> str:
    """The hardware section of one verdict sheet as an HTML fragment (autoescaped)."""
    from seatrial.report.jinja import template

    judged = judge_run(sheet.trials)
    burns = [{"gpu": t.gpu, "samples": t.evidence.get("samples", [])} for t in sheet.trials if t.name == "burn"]
    return template("hw_section.html.j2").render(
        gpus=[g.to_json() for g in sheet.gpus],
        sheet=sheet_table(sheet.trials),
        burns=burns,
        columns=TELEMETRY_COLUMNS,
        verdicts={"passed": judged["passed"], "counts_line": counts_line(judged["counts"])},
    )


def section(run: SummaryModel) -> str | None:
    if isinstance(run, HwFleetSummary):  # `seatrial hw --ray`: one sheet per node, the fleet view
        parts = [f"<h3>Node {n.node[:12]} ({n.hostname} {n.address})</h3>{render_sheet(n)}" for n in run.nodes]
        if run.fleet:
            from seatrial.report.tables import html_table

            parts.append(html_table(sheet_table(run.fleet), heading="h2"))
        return "<h2>Hardware across the fleet (seatrial hw --ray)</h2>" + "".join(parts)
    return render_sheet(run) if isinstance(run, HwSummary) else None
