"""``seatrial hw``'s summary: the verdict sheet of one machine (:class:`HwSummary`: its GPUs and one
:class:`~seatrial.runs.result.TrialResult` row per trial and GPU), or with ``--ray`` every node's sheet and the
fleet view (:class:`HwFleetSummary`); each with what its verdicts add up to."""

from __future__ import annotations

from typing import Any, Self

from pydantic import Field

from seatrial.runs.result import TrialResult
from seatrial.runs.summaries.base import Judged, SummaryModel


class GpuInfo(SummaryModel):
    """One GPU as NVML (or, without NVML, torch) describes it. None means the reading was unavailable."""

    index: int
    name: str
    uuid: str | None = None
    compute_capability: str | None = None
    memory_total_bytes: int | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None
    virtualization_mode: str | None = None
    mig_mode_current: bool | None = None
    mig_mode_pending: bool | None = None
    power_limit_w: float | None = None  # the enforced limit: GPUs of one model at other limits are other kinds
    unavailable: dict[str, str] = Field(default_factory=dict)


class HwSummary(Judged):
    """One machine's verdict sheet: ``{"gpus", "trials", "passed", "not_measured", "counts",
    "missing_required"}`` (issue 6 item 7); ``gpu`` of a row is null for a trial over several GPUs."""

    gpus: list[GpuInfo]
    trials: list[TrialResult]

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> Self:
        """The sheet in ``doc``: a `seatrial hw` summary.json, or a node's entry of ``hw --ray``."""
        return cls.part_of(doc)


class HwNode(Judged):
    """One node of ``hw --ray``: its sheet, or (a node that did not answer) a ``node`` row UNAVAILABLE and no
    verdict fields. Every row names the node."""

    node: str
    address: str | None = None
    hostname: str | None = None
    gpus: list[GpuInfo]
    trials: list[TrialResult]


class HwFleetSummary(Judged):
    """``hw --ray``: every node's sheet, the fleet rows (each figure judged against its kind's median, within
    ``margin``) and what all the rows add up to."""

    nodes: list[HwNode]
    fleet: list[TrialResult]
    margin: float
