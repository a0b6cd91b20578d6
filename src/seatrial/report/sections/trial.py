"""The trial's page: the stage ladder (verdict, time, link), the production profiles, the diagnosis; then each
stage's run folders with their own sections (:func:`stage_pages`)."""

from __future__ import annotations

import html
from pathlib import Path

from seatrial.runs.summaries.base import SummaryModel
from seatrial.runs.summaries.trial import AuditTotals, CheckpointSummary, TrialSummary

e = html.escape


def _num(v: float | None, fmt: str = "{:.4g}") -> str:
    return "—" if v is None else fmt.format(v)


def _ladder(t: TrialSummary) -> str:
    rows = "".join(
        f"<tr><td class='l'>{i}</td><td class='l'>"
        + (f"<a href='#stage-{e(s.name)}'>{e(s.name)}</a>" if s.folder else e(s.name))
        + f"</td><td class='l {'' if s.verdict in ('PASS', 'UNAVAILABLE') else 'bad'}'>{e(s.verdict)}</td>"
        f"<td>{s.seconds:.1f}{' (reused)' if s.reused else ''}</td><td class='l'>{e(s.reason or '')}</td></tr>"
        for i, s in enumerate(t.stages)
    )
    head = "<tr><th class='l'>#</th><th class='l'>stage</th><th class='l'>verdict</th><th>seconds</th><th class='l'>why</th></tr>"
    return f"<table>{head}{rows}</table>"


def _profiles(t: TrialSummary) -> str:
    if not t.profiles:
        return ""
    rows = "".join(
        f"<tr><td class='l'>{e(p.profile)}</td><td class='l'>{e(p.candidate or 'none')}</td><td>{p.peak_req_s:g}</td>"
        f"<td>{_num(p.capacity_req_s)}</td><td>{p.capacity_starts}</td><td>{_num(p.replicas, '{}')}</td>"
        f"<td>{_num(p.gpus, '{}')}</td><td>{_num(p.concurrency_quota, '{}')}</td>"
        f"<td class='l'>{e(', '.join(f'{k} ≤ {v:g}' for k, v in p.slo.items()))} for {p.attainment:.0%}</td>"
        f"<td>{_num(p.usd_per_1m_output_tokens, '{:.3g}')}</td><td class='l'>{e(p.reason)}</td></tr>"
        for p in t.profiles
    )
    head = ("<tr><th class='l'>profile</th><th class='l'>candidate</th><th>peak req/s</th><th>capacity req/s (bound)</th>"
            "<th>starts</th><th>replicas</th><th>GPUs</th><th>concurrency quota</th><th class='l'>SLO</th>"
            "<th>USD / 1M output tokens</th><th class='l'>why</th></tr>")  # fmt: skip
    return f"<h2>Production profiles</h2><table>{head}{rows}</table>"


def _candidates(t: TrialSummary) -> str:
    rows = "".join(
        f"<tr><td class='l'>{e(c.name)}</td><td class='l'>{'dropped at ' + e(c.stage or '') if c.dropped else 'kept'}</td>"
        f"<td class='l'>{e(c.reason or '')}</td></tr>"
        for c in t.candidates
    )
    return f"<h3>Candidates</h3><table><tr><th class='l'>candidate</th><th class='l'>status</th><th class='l'>why</th></tr>{rows}</table>"


def _diagnosis(t: TrialSummary) -> str:
    if not t.diagnosis:
        return "<h2>Diagnosis</h2><p>No symptom in serving or capacity.</p>"
    items = "".join(f"<li><b>{e(d.symptom)}</b>: {e(d.evidence)} <span class='meta'>[{e(d.source)}]</span></li>"
                    for d in t.diagnosis)  # fmt: skip
    return f"<h2>Diagnosis</h2><ul>{items}</ul>"


def section(t: SummaryModel) -> str | None:
    if not isinstance(t, TrialSummary):
        return None
    meta = f"exit code {t.exit_code}; {t.seconds:.0f} s, of it {t.overhead_s:.1f} s the trial's own"
    if t.resumed_from:
        meta += f"; resumed from {t.resumed_from}"
    changes = f"<p class='meta'>{e('; '.join(t.plan_changes))}</p>" if t.plan_changes else ""
    return (f"<h2>Stages</h2><p class='meta'>{e(meta)}</p>{changes}{_ladder(t)}{_candidates(t)}{_profiles(t)}"
            f"{_diagnosis(t)}")  # fmt: skip


def checkpoint_section(c: SummaryModel) -> str | None:
    """Stage 0: the audit's totals and each candidate's memory plan (its ledger where it was checked)."""
    if not isinstance(c, CheckpointSummary):
        return None
    if c.gguf is not None:
        return f"<p>{e(c.gguf)}: a GGUF file of {c.bytes or 0:,} bytes (audit and plan read safetensors)</p>"
    audit = AuditTotals.model_validate(c.audit or {})
    parts = [f"<p>audit: {audit.total_bytes:,} bytes, {audit.total_params:,} parameters, {len(audit.findings)} findings</p>"]
    for name, fit in c.candidates.items():
        ledger = f"<pre>{e(fit.ledger)}</pre>" if fit.ledger else ""
        parts.append(f"<h3>{e(name)}: {'fits' if fit.fits else 'does not fit'}</h3><p>{e(fit.reason)}</p>{ledger}")
    return "".join(parts)


def stage_pages(run_dir: Path, t: SummaryModel) -> list[str]:
    """Each stage's run folders (the stage's own, or those in it two levels down) with their sections."""
    from seatrial.report.html import folder_sections

    parts: list[str] = []
    for s in t.stages if isinstance(t, TrialSummary) else []:
        if not s.folder:
            continue
        root = run_dir / s.folder
        found = sorted(p.parent for p in [root / "run.json", *root.glob("*/run.json"), *root.glob("*/*/run.json")]
                       if p.is_file() and (p.parent / "summary.json").is_file())  # fmt: skip
        parts.append(f"<h2 id='stage-{e(s.name)}'>Stage: {e(s.name)} ({e(s.verdict)})</h2>")
        for folder in found:
            parts.append(f"<p class='meta'>{e(str(folder.relative_to(run_dir)))}/</p>")
            parts += folder_sections(folder)
    return parts
