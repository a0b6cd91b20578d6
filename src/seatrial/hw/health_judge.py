"""Verdicts of the ``health.*`` sub-trials from start/end readings (see :mod:`seatrial.hw.health`).

Rules (each sub-trial, per GPU):
- an unavailable reading (NVML NotSupported / NoPermission ...) is UNAVAILABLE with NVML's reason;
  a partly unreadable one is judged on what was read (a FAIL or REVIEW_REQUIRED found there stands),
  and is never PASS: the counters that could not be read are listed and the verdict is UNAVAILABLE;
- ``ecc``: FAIL on uncorrected volatile errors or uncorrected errors that grew during the run;
  REVIEW_REQUIRED on uncorrected errors in the aggregate (lifetime) count or ECC turned off;
- ``retired_pages``: FAIL when a retirement is pending; REVIEW_REQUIRED when pages were retired;
- ``row_remap``: FAIL on a remapping failure; REVIEW_REQUIRED when a remap is pending (needs a reset);
- ``xid``: FAIL on any XID event during the run;
- ``nvlink``: REVIEW_REQUIRED when an error counter grew during the run or a link is down;
- ``pcie``: REVIEW_REQUIRED when the replay counter grew during the run.
"""

from __future__ import annotations

from typing import Any

from seatrial.hw.nvml import unavailable_reason
from seatrial.runs.result import TrialResult, because
from seatrial.runs.verdicts import Verdict


def judge_health(
    gpu: int, start: dict[str, Any], end: dict[str, Any], xid: dict[str, Any]
) -> list[TrialResult]:
    """All ``health.*`` verdicts of one GPU; ``xid`` is ``{"events": [...]}`` or an unavailable reading."""
    return [
        _judge_ecc(gpu, start["ecc"], end["ecc"]),
        _judge_retired(gpu, end["retired_pages"]),
        _judge_remap(gpu, end["row_remap"]),
        _judge_xid(gpu, xid),
        _judge_nvlink(gpu, start["nvlink"], end["nvlink"]),
        _judge_pcie(gpu, start["pcie"], end["pcie"]),
    ]


def _result(
    part: str, gpu: int, verdict: Verdict, evidence: dict[str, Any], reason: str | None = None
) -> TrialResult:
    return TrialResult(
        name=f"health.{part}", gpu=gpu, verdict=verdict, reasons=because(reason), evidence=evidence
    )


def _unavailable(part: str, gpu: int, readings: dict[str, Any], keys: list[str]) -> TrialResult | None:
    """UNAVAILABLE when every one of ``keys`` is unavailable; the reasons are joined."""
    reasons = [unavailable_reason(readings.get(k)) for k in keys]
    if all(reasons):
        return _result(part, gpu, Verdict.UNAVAILABLE, readings, "; ".join(sorted({r for r in reasons if r})))
    return None


def _num(value: Any) -> int | None:
    """A counter's value, or None when it was not read (never a 0 in its place)."""
    return int(value) if isinstance(value, int | bool) else None


def _grew(start: Any, end: Any) -> int | None:
    """How much a counter grew over the run; None when either reading is missing."""
    a, b = _num(start), _num(end)
    return None if a is None or b is None else b - a


def _not_read(part: str, gpu: int, evidence: dict[str, Any], missing: list[str]) -> TrialResult:
    """Nothing bad in what was read, but a counter the PASS needs was not read: UNAVAILABLE, listed."""
    reason = f"not read: {', '.join(missing)}; the readable counters show no problem"
    return _result(part, gpu, Verdict.UNAVAILABLE, evidence | {"not_read": missing}, reason)


def _judge_ecc(gpu: int, start: dict[str, Any], end: dict[str, Any]) -> TrialResult:
    keys = ["corrected_volatile", "corrected_aggregate", "uncorrected_volatile", "uncorrected_aggregate"]
    evidence = {"start": start, "end": end}
    if (gone := _unavailable("ecc", gpu, end, keys)) is not None:
        return gone.model_copy(update={"evidence": evidence})
    volatile = _num(end.get("uncorrected_volatile"))
    grew = _grew(start.get("uncorrected_aggregate"), end.get("uncorrected_aggregate"))
    if (volatile or 0) > 0 or (grew or 0) > 0:
        reason = f"uncorrected ECC errors: volatile {volatile}, grew by {grew} during the run"
        return _result("ecc", gpu, Verdict.FAIL, evidence, reason)
    aggregate = _num(end.get("uncorrected_aggregate"))
    if (aggregate or 0) > 0:
        reason = f"{aggregate} uncorrected ECC errors in the lifetime count"
        return _result("ecc", gpu, Verdict.REVIEW_REQUIRED, evidence, reason)
    mode = end.get("mode")
    if isinstance(mode, list) and not mode[0]:
        return _result("ecc", gpu, Verdict.REVIEW_REQUIRED, evidence, "ECC is turned off")
    missing = [
        f"end.{k}" for k in ("uncorrected_volatile", "uncorrected_aggregate") if _num(end.get(k)) is None
    ]
    if _num(start.get("uncorrected_aggregate")) is None:
        missing.append("start.uncorrected_aggregate")
    if missing:
        return _not_read("ecc", gpu, evidence, missing)
    return _result("ecc", gpu, Verdict.PASS, evidence)


def _judge_retired(gpu: int, end: dict[str, Any]) -> TrialResult:
    keys = ["single_bit", "double_bit", "pending"]
    if (gone := _unavailable("retired_pages", gpu, end, keys)) is not None:
        return gone
    if _num(end.get("pending")):
        return _result("retired_pages", gpu, Verdict.FAIL, end, "a page retirement is pending")
    retired = (_num(end.get("single_bit")) or 0) + (_num(end.get("double_bit")) or 0)
    if retired:
        return _result("retired_pages", gpu, Verdict.REVIEW_REQUIRED, end, f"{retired} page(s) retired")
    if missing := [k for k in keys if _num(end.get(k)) is None]:
        return _not_read("retired_pages", gpu, {"end": end}, missing)
    return _result("retired_pages", gpu, Verdict.PASS, end)


def _judge_remap(gpu: int, end: Any) -> TrialResult:
    if (reason := unavailable_reason(end)) is not None:
        return _result("row_remap", gpu, Verdict.UNAVAILABLE, {"end": end}, reason)
    if end["failure"]:
        return _result("row_remap", gpu, Verdict.FAIL, end, "row remapping failed (no spare rows left)")
    if end["pending"]:
        return _result(
            "row_remap", gpu, Verdict.REVIEW_REQUIRED, end, "a row remap is pending: reset the GPU"
        )
    return _result("row_remap", gpu, Verdict.PASS, end)


def _judge_xid(gpu: int, xid: dict[str, Any]) -> TrialResult:
    if (reason := unavailable_reason(xid)) is not None:
        return _result("xid", gpu, Verdict.UNAVAILABLE, xid, reason)
    if xid["events"]:
        codes = sorted({e["xid"] for e in xid["events"]})
        return _result("xid", gpu, Verdict.FAIL, xid, f"XID event(s) during the run: {codes}")
    return _result("xid", gpu, Verdict.PASS, xid)


def _judge_nvlink(gpu: int, start: Any, end: Any) -> TrialResult:
    evidence = {"start": start, "end": end}
    if (reason := unavailable_reason(end)) is not None:
        return _result("nvlink", gpu, Verdict.UNAVAILABLE, evidence, reason)
    links = end["links"]
    if not links:
        return _result("nvlink", gpu, Verdict.UNAVAILABLE, evidence, "NVML lists no NVLink links")
    down = [k for k, v in links.items() if not v["active"]]
    counters = ("replay", "recovery", "crc_flit", "crc_data")
    before = start.get("links", {}) if isinstance(start, dict) else {}
    growth = {
        f"link {k} {name}": _grew(before.get(k, {}).get(name), v.get(name))
        for k, v in links.items()
        if v["active"]
        for name in counters
    }
    if grown := [what for what, g in growth.items() if (g or 0) > 0]:
        return _result("nvlink", gpu, Verdict.REVIEW_REQUIRED, evidence, "errors grew: " + ", ".join(grown))
    if down:
        return _result("nvlink", gpu, Verdict.REVIEW_REQUIRED, evidence, f"links down: {', '.join(down)}")
    if missing := [what for what, g in growth.items() if g is None]:
        return _not_read("nvlink", gpu, evidence, missing)
    return _result("nvlink", gpu, Verdict.PASS, evidence)


def _judge_pcie(gpu: int, start: dict[str, Any], end: dict[str, Any]) -> TrialResult:
    evidence = {"start": start, "end": end}
    if (reason := unavailable_reason(end.get("replay_counter"))) is not None:
        return _result("pcie", gpu, Verdict.UNAVAILABLE, evidence, reason)
    grew = _grew(start.get("replay_counter"), end["replay_counter"])
    if grew is None:
        return _not_read("pcie", gpu, evidence, ["start.replay_counter"])
    if grew > 0:
        return _result("pcie", gpu, Verdict.REVIEW_REQUIRED, evidence, f"PCIe replay counter grew by {grew}")
    return _result("pcie", gpu, Verdict.PASS, evidence)
