"""The tables of an experiment's summary as text cells (console and report show the same)."""

from __future__ import annotations

from typing import Any

from seatrial.runs.levels import num
from seatrial.runs.table import Table

DECISION_COLUMNS = (
    "treatment", "profile", "verdict", "metric", "gain %", "95% interval %", "threshold %", "A/A spread %",
    "guardrails", "starts", "starts needed",
)  # fmt: skip


def _pct(v: Any) -> str:
    return num(v, "{:+.1f}")


def decision_table(decisions: list[dict[str, Any]]) -> Table:
    rows, ok = [], []
    for d in decisions:
        lo, hi = d["ci_pct"]
        guards = ", ".join(f"{g['metric']} {g['status']}" for g in d["guardrails"]) or "–"
        name = d["treatment"] + (" (A/A)" if d.get("aa_control") else "")
        needed = d.get("power_starts_needed")
        rows.append([
            name, f"{d['profile']} C={d['concurrency']}", d["verdict"], d["metric"], _pct(d["gain_pct"]),
            f"[{_pct(lo)}, {_pct(hi)}]", num(d["threshold_pct"]), num(d["aa_spread_pct"]), guards,
            f"{d['starts']['baseline']}+{d['starts']['treatment']}", "–" if needed is None else str(needed),
        ])  # fmt: skip
        ok.append(d["verdict"] != "REJECT")
    return Table("Decisions", DECISION_COLUMNS, rows, ok)


def starts_table(settings: list[dict[str, Any]]) -> Table:
    """Every start: whether it came up, its start-up time, its levels' output tok/s, how it stopped."""
    rows, ok = [], []
    for s in settings:
        for st in s["starts"]:
            levels = ", ".join(
                f"C={lv['concurrency']} {num(lv.get('output_tok_s'))}" + ("" if lv["valid"] else " INVALID")
                for lv in st.get("levels", [])
            )
            stop = st.get("stop") or {}
            tries = len(st.get("attempts", []))
            rows.append([
                s["name"], str(st["index"] + 1), "yes" if st.get("ok") else "NO", num(st.get("startup_s")),
                str(tries) if tries else "–", levels or "–", f"{stop.get('signal') or '–'} {num(stop.get('stop_s'))}",
            ])  # fmt: skip
            ok.append(bool(st.get("ok")))
    cols = ("setting", "start", "up", "start-up s", "failed tries", "output tok/s", "stopped by, s")
    return Table("Starts", cols, rows, ok)


def level_table(settings: list[dict[str, Any]], metric: str) -> Table:
    """Per setting and level: the per-start values of ``metric``, their mean, SD and CV."""
    rows = []
    for s in settings:
        for lv in s.get("levels", []):
            st = lv["stats"].get(metric) or {}
            values = ", ".join(num(v) for v in st.get("per_start", []))
            pooled = f"{num(st['pooled'])} (n={st['pooled_n']})" if "pooled" in st else "–"
            rows.append([s["name"], f"C={lv['concurrency']}", values or "–", num(st.get("mean")), num(st.get("sd")),
                         num(st.get("cv"), "{:.1%}"), num(st.get("within_start_sd")), pooled])  # fmt: skip
    cols = ("setting", "level", "per start", "mean", "between-start SD", "CV", "within-start SD", "pooled")
    return Table(f"{metric} per setting and level", cols, rows, [True] * len(rows))
