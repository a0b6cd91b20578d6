"""``seatrial hw``'s summary.json is :class:`HwSummary` (one machine) or :class:`HwFleetSummary` (``--ray``):
sheets written by real runs on H200 hosts (evidence/, from before rows had ``reasons`` and ``samples`` and
GPUs ``power_limit_w``) read back through the models and lose nothing; a sheet written now reads back
exactly (tests/hw/test_runner_cli.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seatrial.runs.summaries.hw import HwFleetSummary, HwSummary

EVIDENCE = Path(__file__).resolve().parents[2] / "evidence"


def _is_sheet(p: Path) -> bool:
    """An hw sheet: ``hw_*.json``, or a run folder's summary.json whose run.json names the hw command (a bench's,
    an experiment's are not sheets)."""
    if p.name.startswith("hw_"):
        return True
    run = p.with_name("run.json")
    return p.name == "summary.json" and run.exists() and json.loads(run.read_text()).get("command") == "hw"


SHEETS = sorted(p for p in EVIDENCE.glob("*/**/*.json") if _is_sheet(p))


def _read(doc: dict[str, Any]) -> HwSummary | HwFleetSummary:
    return HwFleetSummary.model_validate(doc) if "nodes" in doc else HwSummary.model_validate(doc)


@pytest.mark.parametrize("path", SHEETS, ids=lambda p: str(p.relative_to(EVIDENCE)))
def test_sheets_of_real_h200_runs_read_back_unchanged(path: Path) -> None:
    doc = json.loads(path.read_text())
    summary = _read(doc)
    again = summary.to_json()
    assert list(again) == list(doc) and _within(doc, again) == set()
    assert _read(again).to_json() == again
    rows = summary.trials if isinstance(summary, HwSummary) else [t for n in summary.nodes for t in n.trials]
    assert rows and all(t.verdict.value == row["verdict"] for t, row in zip(rows, _rows(doc), strict=True))


def _rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["trials"] if "trials" in doc else [t for n in doc["nodes"] for t in n["trials"]]


#: what rows and GPUs gained after those runs (with their defaults); nothing else may differ
LATER = {("reasons", "list"), ("samples", "dict"), ("power_limit_w", "NoneType")}


def _within(old: Any, new: Any, path: str = "") -> set[str]:
    """Where ``old`` is not kept in ``new`` (keys ``new`` adds are allowed only as LATER's defaults)."""
    if isinstance(old, dict) and isinstance(new, dict):
        added = {f"{path}/{k}" for k in set(new) - set(old) if (k, type(new[k]).__name__) not in LATER}
        lost = {f"{path}/{k} lost" for k in set(old) - set(new)}
        return added | lost | {d for k in set(old) & set(new) for d in _within(old[k], new[k], f"{path}/{k}")}
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return {d for i, (a, b) in enumerate(zip(old, new, strict=True)) for d in _within(a, b, f"{path}[{i}]")}
    return set() if old == new and type(old) is type(new) else {path}


def test_the_evidence_holds_both_shapes() -> None:
    kinds = {type(_read(json.loads(p.read_text()))) for p in SHEETS}
    assert kinds == {HwSummary, HwFleetSummary} and len(SHEETS) >= 6


def test_a_summary_with_a_misspelt_field_is_refused() -> None:
    doc = json.loads(SHEETS[0].read_text())
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        _read({**doc, "pased": True})


def test_the_report_reads_a_real_fleet_summary_through_its_model(tmp_path: Path) -> None:
    from tests.pages import page_of

    doc = json.loads((EVIDENCE / "h200-ray" / "run" / "summary.json").read_text())
    page = page_of(tmp_path / "run", doc, "hw")
    fleet = HwFleetSummary.model_validate(doc)
    assert "Hardware across the fleet" in page and all(f"Node {n.node[:12]}" in page for n in fleet.nodes)
    assert fleet.nodes and all(t.node == n.node for n in fleet.nodes for t in n.trials)
