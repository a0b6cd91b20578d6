"""``seatrial io``'s summary: one row per node and trial, ``{node, trial, verdict, reason, figures, runs}``
(``figures``: the medians the verdict was drawn from, their spread and the limits; ``runs``: every repeat's
own figures), the fleet-relative rows, the nodes that could not be reached, and what the verdicts add up to."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from seatrial.runs.result import TrialResult
from seatrial.runs.summaries.base import Judged, SummaryModel
from seatrial.runs.verdicts import Verdict


class IoRow(SummaryModel):
    node: str  # a node as given, or "A <-> B" for a pair of nodes
    trial: str
    verdict: Verdict
    reason: str | None = None
    figures: dict[str, Any] = Field(default_factory=dict)
    runs: list[dict[str, Any]] = Field(default_factory=list)

    def as_trial(self) -> TrialResult:
        """The row as the one result model (for what a run's verdicts add up to)."""
        return TrialResult(name=self.trial, node=self.node, verdict=self.verdict, reasons=[self.reason] if self.reason else [],
                           samples={"repeats": len(self.runs)}, evidence={"figures": self.figures})  # fmt: skip


class IoSummary(Judged):
    nodes: list[str]
    unreachable: dict[str, str] = Field(default_factory=dict)
    results: list[IoRow]
    fleet: list[IoRow] = Field(default_factory=list)
    margin: float
    repeats: int
    max_cv: float

    def rows(self) -> list[IoRow]:
        return [*self.results, *self.fleet]
