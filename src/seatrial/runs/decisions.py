"""The tables of an experiment's summary as text cells (console and report show the same)."""

from __future__ import annotations

from typing import Any

from seatrial.runs.levels import num
from seatrial.runs.summaries.experiment import Decision, ExperimentSetting
from seatrial.runs.table import Table

DECISION_COLUMNS = (
    "treatment", "profile", "verdict", "metric", "method", "gain %", "interval %", "min gain %", "guardrails",
    "starts", "pooled n", "rough power: starts/setting", "why",
)  # fmt: skip


def _pct(v: Any) -> str:
    return num(v, "{:+.1f}")


def _interval(ci: list[float | None], confidence: float | None) -> str:
    lo, hi = ci
    if lo is None or hi is None:
        return "–"
    return f"[{_pct(lo)}, {_pct(hi)}] at {num(confidence, '{:.2%}')}"


def decision_table(decisions: list[Decision]) -> Table:
    rows, ok = [], []
    for d in decisions:
        guards = ", ".join(f"{g.metric} {g.status}" for g in d.guardrails) or "–"
        name = d.treatment + (" (A/A)" if d.aa_control else "")
        needed = d.power_starts_needed
        pooled = d.pooled_n
        n = "–" if pooled.get("baseline") is None else f"{pooled['baseline']}+{pooled.get('treatment')}"
        why = [*(d.invalid or []), *d.reasons, *d.excluded]
        why += [f"{g.metric}: {r}" for g in d.guardrails for r in g.reasons]
        method = d.method + (f", Holm {d.holm['step']}/{d.holm['family']}" if d.holm else "")
        rows.append([
            name, f"{d.profile} C={d.concurrency}", d.verdict or "–", d.metric, method, _pct(d.gain_pct),
            _interval(d.ci_pct, d.confidence), num(d.min_gain_pct), guards,
            f"{d.starts['baseline']}+{d.starts['treatment']}", n, "–" if needed is None else f"~{needed}",
            "; ".join(why) or "–",
        ])  # fmt: skip
        ok.append(d.verdict not in ("REJECT", "INVALID"))
    return Table("Decisions", DECISION_COLUMNS, rows, ok)


def aa_table(checks: list[dict[str, Any]]) -> Table:
    """Every A/A check: what it compared, its interval at the check level, and its status."""
    rows = [
        [c["profile"], c["check"], c["metric"], _pct(c["gain_pct"]), _interval(c["ci_pct"], c["confidence"]),
         f"{c['starts'][0]}+{c['starts'][1]}", c["status"], c["reason"]]
        for c in checks
    ]  # fmt: skip
    cols = ("profile", "A/A check", "metric", "gain %", "interval %", "starts", "status", "why")
    return Table("A/A checks", cols, rows, [c["status"] in ("OK", "UNCHECKED") for c in checks])


def drift_table(drift: list[dict[str, Any]]) -> Table:
    """Per profile, the per-start values' slope against run slot and the drift it makes over the run."""
    rows = []
    for d in drift:
        per = d.get("pct_per_slot_ci") or [None, None]
        run = d.get("over_run_ci_pct") or [None, None]
        rows.append([
            d["profile"], d["metric"], f"C={d['concurrency']}", _pct(d.get("pct_per_slot")),
            f"[{_pct(per[0])}, {_pct(per[1])}]", _pct(d.get("over_run_pct")), f"[{_pct(run[0])}, {_pct(run[1])}]",
            str(d["slots"]), d.get("flag") or d.get("reason") or "–",
        ])  # fmt: skip
    cols = (
        "profile",
        "metric",
        "level",
        "% per slot",
        "interval",
        "over the run %",
        "interval",
        "slots",
        "flag",
    )
    return Table("Drift: per-start values against run slot", cols, rows, [not d.get("flag") for d in drift])


def starts_table(settings: list[ExperimentSetting]) -> Table:
    """Every start: whether it came up, its start-up time, its levels' output tok/s, how it stopped."""
    rows, ok = [], []
    for s in settings:
        for st in s.starts:
            levels = ", ".join(
                f"C={lv.concurrency} {num(lv.output_tok_s)}" + ("" if lv.valid else " INVALID") for lv in st.levels
            )
            stop = st.stop or {}
            tries = len(st.attempts)
            rows.append([
                s.name, str(st.index + 1), "yes" if st.ok else "NO", num(st.startup_s),
                str(tries) if tries else "–", levels or "–", f"{stop.get('signal') or '–'} {num(stop.get('stop_s'))}",
            ])  # fmt: skip
            ok.append(bool(st.ok))
    cols = ("setting", "start", "up", "start-up s", "failed tries", "output tok/s", "stopped by, s")
    return Table("Starts", cols, rows, ok)


def level_table(settings: list[ExperimentSetting], metric: str) -> Table:
    """Per setting and level: the per-start values of ``metric``, their geometric mean (throughputs) or
    the pooled statistic with its n (request-level metrics: never a mean of per-start percentiles), and
    the between-start SD of the logs."""
    rows = []
    for s in settings:
        for lv in s.levels:
            st = lv.stats.get(metric) or {}
            values = ", ".join(num(v) for v in st.get("per_start", []))
            pooled = f"{num(st['pooled'])} (n={st['pooled_n']})" if "pooled" in st else "–"
            rows.append([s.name, f"C={lv.concurrency}", values or "–", num(st.get("geomean")),
                         num(st.get("sd_log"), "{:.1%}"), num(st.get("within_start_sd")), pooled])  # fmt: skip
    cols = (
        "setting",
        "level",
        "per start",
        "geo. mean",
        "between-start SD (log)",
        "within-start SD",
        "pooled",
    )
    return Table(f"{metric} per setting and level", cols, rows, [True] * len(rows))
