"""The tables of a ``seatrial compare`` summary as text cells (console and report show the same)."""

from __future__ import annotations

from seatrial.runs.levels import num
from seatrial.runs.summaries.compare import CompareSummary, FactorRow, RatioCell
from seatrial.runs.table import Table

COLUMNS = ("workload", "level", "candidate", "metric", "baseline", "candidate value", "ratio", "gain %",
           "95% interval %", "interval", "method", "verdict", "starts", "why")  # fmt: skip


def comparison_table(summary: CompareSummary) -> Table:
    """Values are geometric means over starts (throughputs) or pooled statistics (request-level); the
    ratio and gain are ratios of geometric means of per-start values."""
    rows, ok = [], []
    for c in summary.comparisons:
        for m in c.metrics:
            lo, hi = m.ci_pct
            rows.append([
                c.workload, c.level, c.candidate, m.metric, num(m.baseline), num(m.candidate),
                num(m.ratio, "{:.3f}"), num(m.gain_pct, "{:+.1f}"),
                f"[{num(lo, '{:+.1f}')}, {num(hi, '{:+.1f}')}]", m.interval or "–", m.method,
                m.verdict, "+".join(map(str, m.starts)), "; ".join(m.reasons) or "–",
            ])  # fmt: skip
            ok.append(m.verdict != "REGRESSED")
    against = summary.reference or ("deployment " + summary.deployment.names[1] if summary.deployment else "–")
    return Table(f"Compared with {against}", COLUMNS, rows, ok)


def _x(cell: RatioCell | FactorRow) -> str:
    """A ratio with its interval: ``2.10x [1.80, 2.45]``."""
    if cell.ratio is None:
        return "–"
    lo, hi = cell.ci
    ci = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else " (no interval: 1 start)"
    return f"{cell.ratio:.2f}x{ci}"


def deployment_table(summary: CompareSummary) -> Table | None:
    """Two deployments: per phase and level, how many times faster the first is, each with its interval."""
    dep = summary.deployment
    if dep is None or not dep.phases:
        return None
    a, b = dep.names
    rows = [[p.workload, p.level, _x(p.prompt_tok_s), _x(p.decode_speed), _x(p.output_tok_s)] for p in dep.phases]
    cols = ("workload", "level", f"prompt tok/s {a}/{b}", f"decode speed (1/TPOT) {a}/{b}", f"output tok/s {a}/{b}")
    return Table(f"Per phase: how many times faster {a} is than {b} (95% intervals over starts)", cols, rows,
                 [True] * len(rows))  # fmt: skip


def split_table(summary: CompareSummary) -> Table | None:
    """A 2 x 2 of deployments: each factor's ratio (averaged over the other's levels) and the interaction."""
    dep = summary.deployment
    if dep is None or not dep.split or not dep.precisions or not dep.topologies:
        return None
    p1, p2 = dep.precisions
    t1, t2 = dep.topologies
    label = {"precision": f"precision {p1}/{p2}", "topology": f"topology {t1}/{t2}", "interaction": "interaction"}
    rows = [[s.workload, s.level, s.measure, label[s.factor], _x(s)] for s in dep.split]
    cols = ("workload", "level", "speed", "factor", "ratio [95% interval]")
    return Table("Precision and topology apart (2 x 2 of deployments)", cols, rows, [True] * len(rows))


def capacity_table(summary: CompareSummary) -> Table | None:
    """Each deployment's capacity at the SLO, per GPU and per dollar (from its capacity run)."""
    if summary.deployment is None or not summary.deployment.capacity.rows:
        return None
    cap = summary.deployment.capacity
    rows = []
    for r in cap.rows:
        per_gpu, cost = r.per_gpu or {}, r.cost or {}
        unit = "req/s" if r.mode == "rate" else "users"
        rows.append([r.deployment, f"{num(r.capacity, '{:.3g}')} {unit}" if r.found else "none found",
                     ", ".join(f"{k} <= {v:g}" for k, v in r.slo.items()) + f" for {r.attainment:.0%}",
                     num(per_gpu.get("req_s"), "{:.3g}"), num(per_gpu.get("output_tok_s")),
                     num(cost.get("usd_per_1m_output_tokens"), "${:,.3f}")])  # fmt: skip
    title = "Capacity at the SLO (lower bounds)" + ("" if cap.comparable else f": {cap.reason}")
    cols = ("deployment", "capacity", "SLO", "req/s per GPU", "output tok/s per GPU", "USD per 1M output tokens")
    return Table(title, cols, rows, [cap.comparable] * len(rows))
