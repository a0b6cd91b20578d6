"""Demo section: which steps ran, the plan beside vLLM's own KV line, the conversion, the guard's events."""

from __future__ import annotations

import html
from typing import Any

from seatrial.runs.verdicts import counts_line


def _result(step: dict[str, Any]) -> str:
    """What the step gave: its verdict counts, its valid levels, or that it ran (or failed to)."""
    if not step["ok"]:
        return "<span class='bad'>FAILED</span>"
    if step.get("verdicts") is not None:
        word = "passed" if step["passed"] else "not passed"
        return html.escape(f"{word}: {counts_line(step['verdicts'])}")
    if step.get("valid_levels"):
        return html.escape(f"{step['valid_levels']} levels valid")
    if step.get("decisions"):
        return html.escape(step["decisions"])
    if step.get("capacity"):
        return html.escape(step["capacity"])
    if "verified" in step:
        return "verified identical" if step["verified"] else "<span class='bad'>differs</span>"
    return "ran"


def _steps(steps: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td class='l'>{html.escape(s['name'])}</td><td class='l'>{_result(s)}</td>"
        f"<td>{s['seconds']}</td><td class='l'>{html.escape(s['error'] or '')}</td></tr>"
        for s in steps
    )
    return f"<table><tr><th class='l'>step</th><th>result</th><th>seconds</th><th class='l'>error</th></tr>{rows}</table>"


def section(summary: dict[str, Any]) -> str | None:
    steps = summary.get("steps")
    if not steps:
        return None
    parts = ["<h2>Demo pipeline</h2>", _steps(steps)]
    if plan := summary.get("plan"):
        line = (summary.get("engine") or {}).get("kv_cache_line") or "(engine did not start)"
        parts.append(
            f"<h3>Plan (before loading) and what vLLM printed after</h3><pre>{html.escape(plan['ledger'])}\n\n"
            f"plan: KV cache {plan['kv_cache_tokens']:,} tokens, max concurrency {plan['max_concurrency']:.2f}x\n"
            f"vLLM: {html.escape(line)}</pre>"
        )
    if conv := summary.get("convert"):
        parts.append(
            f"<p>convert: total_size {conv['total_size_before']:,} → {conv['total_size_after']:,} bytes; "
            f"embed_tokens after: {html.escape(str(conv['embed_formats_after']))}</p>"
        )
    if guard := summary.get("guard"):
        events = ", ".join(html.escape(f"{e['event']} ({e.get('reason', '')})") for e in guard["history"])
        parts.append(f"<p>guard history: {events}</p>")
    return "".join(parts)
