"""``dcgm``: fold NVIDIA DCGM's own diagnostic (``dcgmi diag -r LEVEL -j``) into the verdict sheet.

Each DCGM test becomes a trial ``dcgm.<test>`` (``gpu`` null) whose verdict maps DCGM's own status
(kept in ``evidence.dcgm_result``): Pass -> PASS, Fail -> FAIL, Warn -> REVIEW_REQUIRED,
Skip / Not Run -> UNAVAILABLE. Without ``dcgmi`` on PATH, or when it gives no JSON, the single trial
``dcgm`` is UNAVAILABLE with the reason.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

from seatrial.runs.result import TrialResult, because
from seatrial.runs.verdicts import Verdict

DCGM_TIMEOUT_S = 3600
STATUS_VERDICTS = {
    "pass": Verdict.PASS,
    "fail": Verdict.FAIL,
    "warn": Verdict.REVIEW_REQUIRED,
    "warning": Verdict.REVIEW_REQUIRED,
    "skip": Verdict.UNAVAILABLE,
    "skipped": Verdict.UNAVAILABLE,
    "not run": Verdict.UNAVAILABLE,
    "notrun": Verdict.UNAVAILABLE,
}
_SEVERITY = [Verdict.PASS, Verdict.UNAVAILABLE, Verdict.REVIEW_REQUIRED, Verdict.FAIL]


def run_dcgm(level: int) -> list[TrialResult]:
    """Run ``dcgmi diag -r level -j`` and return one trial per DCGM test (or one UNAVAILABLE ``dcgm``)."""
    dcgmi = shutil.which("dcgmi")
    if dcgmi is None:
        return [_unavailable("dcgmi not found on PATH (DCGM is not installed)", level)]
    try:
        proc = subprocess.run(
            [dcgmi, "diag", "-r", str(level), "-j"], capture_output=True, text=True, timeout=DCGM_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return [_unavailable(f"dcgmi diag -r {level} did not finish in {DCGM_TIMEOUT_S} s", level)]
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        text = (proc.stdout + proc.stderr).strip().splitlines()
        return [
            _unavailable(f"dcgmi diag exited {proc.returncode}: {text[0] if text else 'no output'}", level)
        ]
    return parse_dcgm(doc, level)


def _unavailable(reason: str, level: int) -> TrialResult:
    return TrialResult(
        name="dcgm", gpu=None, verdict=Verdict.UNAVAILABLE, reasons=because(reason), evidence={"level": level}
    )


def _verdict(status: str) -> Verdict:
    return STATUS_VERDICTS.get(status.strip().lower(), Verdict.REVIEW_REQUIRED)


def _messages(entry: dict[str, Any]) -> list[str]:
    texts: list[str] = []
    for key in ("warnings", "info"):
        for item in entry.get(key) or []:
            texts.append(
                str(item.get("warning", item.get("message", item)) if isinstance(item, dict) else item)
            )
    return texts


def parse_dcgm(doc: dict[str, Any], level: int) -> list[TrialResult]:
    """One trial per test in DCGM 3.x ('DCGM GPU Diagnostic') or 4.x ('DCGM Diagnostic') JSON."""
    body = next((v for k, v in doc.items() if "Diagnostic" in k and isinstance(v, dict)), None)
    if body is None:
        return [_unavailable("dcgmi diag JSON has no diagnostic section", level)]
    trials: list[TrialResult] = []
    for category in body.get("test_categories", []):
        for test in category.get("tests", []):
            entries = test.get("results", [])
            per_gpu = {str(e.get("gpu_ids", e.get("entity_id", "all"))): e.get("status", "") for e in entries}
            summary = (test.get("test_summary") or {}).get("status")
            verdicts = [_verdict(s) for s in per_gpu.values()] or [Verdict.UNAVAILABLE]
            verdict = _verdict(summary) if summary else max(verdicts, key=_SEVERITY.index)
            messages = [m for e in entries for m in _messages(e)]
            evidence = {
                "level": level,
                "category": category.get("category"),
                "dcgm_result": summary or ", ".join(sorted(set(per_gpu.values()))),
                "per_gpu": per_gpu,
            }
            name = "dcgm." + str(test.get("name", "unknown")).strip().lower().replace(" ", "_")
            reason = "; ".join(messages) if verdict is not Verdict.PASS and messages else None
            if verdict is not Verdict.PASS and reason is None:
                reason = f"DCGM result: {evidence['dcgm_result']}"
            trials.append(
                TrialResult(name=name, gpu=None, verdict=verdict, reasons=because(reason), evidence=evidence)
            )
    return trials or [_unavailable("dcgmi diag JSON lists no tests", level)]
