"""Verdicts of the ``health.*`` sub-trials from start/end readings (see :mod:`seatrial.hw.health`).

Rules (each sub-trial, per GPU):
- an unavailable reading (NVML NotSupported / NoPermission ...) is UNAVAILABLE with NVML's reason;
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

from seatrial.hw.models import TrialResult
from seatrial.hw.nvml import unavailable_reason
from seatrial.verdict import Verdict


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
    return TrialResult(name=f"health.{part}", gpu=gpu, verdict=verdict, reason=reason, evidence=evidence)


def _unavailable(part: str, gpu: int, readings: dict[str, Any], keys: list[str]) -> TrialResult | None:
    """UNAVAILABLE when every one of ``keys`` is unavailable; the reasons are joined."""
    reasons = [unavailable_reason(readings.get(k)) for k in keys]
    if all(reasons):
        return _result(part, gpu, Verdict.UNAVAILABLE, readings, "; ".join(sorted({r for r in reasons if r})))
    return None


def _num(value: Any) -> int:
    return int(value) if isinstance(value, int | bool) else 0


def _judge_ecc(gpu: int, start: dict[str, Any], end: dict[str, Any]) -> TrialResult:
    keys = ["corrected_volatile", "corrected_aggregate", "uncorrected_volatile", "uncorrected_aggregate"]
    evidence = {"start": start, "end": end}
    if (gone := _unavailable("ecc", gpu, end, keys)) is not None:
        return gone.model_copy(update={"evidence": evidence})
    grew = _num(end.get("uncorrected_aggregate")) - _num(start.get("uncorrected_aggregate"))
    if _num(end.get("uncorrected_volatile")) > 0 or grew > 0:
        volatile = end.get("uncorrected_volatile")
        reason = f"uncorrected ECC errors: volatile {volatile}, grew by {grew} during the run"
        return _result("ecc", gpu, Verdict.FAIL, evidence, reason)
    if _num(end.get("uncorrected_aggregate")) > 0:
        reason = f"{end['uncorrected_aggregate']} uncorrected ECC errors in the lifetime count"
        return _result("ecc", gpu, Verdict.REVIEW_REQUIRED, evidence, reason)
    mode = end.get("mode")
    if isinstance(mode, list) and not mode[0]:
        return _result("ecc", gpu, Verdict.REVIEW_REQUIRED, evidence, "ECC is turned off")
    return _result("ecc", gpu, Verdict.PASS, evidence)


def _judge_retired(gpu: int, end: dict[str, Any]) -> TrialResult:
    if (gone := _unavailable("retired_pages", gpu, end, ["single_bit", "double_bit", "pending"])) is not None:
        return gone
    if _num(end.get("pending")):
        return _result("retired_pages", gpu, Verdict.FAIL, end, "a page retirement is pending")
    retired = _num(end.get("single_bit")) + _num(end.get("double_bit"))
    if retired:
        return _result("retired_pages", gpu, Verdict.REVIEW_REQUIRED, end, f"{retired} page(s) retired")
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
    grown = [
        f"link {k} {name}"
        for k, v in links.items()
        for name in ("replay", "recovery", "crc_flit", "crc_data")
        if _num(v.get(name)) > _num(start.get("links", {}).get(k, {}).get(name))
    ]
    if grown:
        return _result("nvlink", gpu, Verdict.REVIEW_REQUIRED, evidence, "errors grew: " + ", ".join(grown))
    if down:
        return _result("nvlink", gpu, Verdict.REVIEW_REQUIRED, evidence, f"links down: {', '.join(down)}")
    return _result("nvlink", gpu, Verdict.PASS, evidence)


def _judge_pcie(gpu: int, start: dict[str, Any], end: dict[str, Any]) -> TrialResult:
    evidence = {"start": start, "end": end}
    if (reason := unavailable_reason(end.get("replay_counter"))) is not None:
        return _result("pcie", gpu, Verdict.UNAVAILABLE, evidence, reason)
    grew = _num(end["replay_counter"]) - _num(start.get("replay_counter"))
    if grew > 0:
        return _result("pcie", gpu, Verdict.REVIEW_REQUIRED, evidence, f"PCIe replay counter grew by {grew}")
    return _result("pcie", gpu, Verdict.PASS, evidence)
