"""``seatrial accept``'s summary: the server it judged, one :class:`~seatrial.runs.result.TrialResult` row per
trial in the order they ran (the per-trial model: verdict, reasons, samples, evidence), what the engine's
spans and the plan check gave when asked for, and what the verdicts add up to."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seatrial.runs.result import TrialResult
from seatrial.runs.summaries.base import Judged, SummaryModel
from seatrial.runs.summaries.bench import PlanCheck, SpanCounts


class ServerFacts(SummaryModel):
    """What the server stated before the trials (seatrial.trials.serverinfo): its context limit, its KV
    cache layout and capacity in tokens, whether it caches prefixes and offloads KV (None: not stated)."""

    max_model_len: int | None = None
    block_size: int | None = None
    num_blocks: int | None = None
    kv_capacity_tokens: int | None = None
    prefix_caching: bool | None = None
    kv_offloading_size: str | None = None


class AcceptSummary(Judged):
    """``spans`` and ``plan_check`` are present only when asked for (``--otlp-listen``, ``--plan``); the
    verdict fields once every trial has run (a summary rewritten after each trial has none)."""

    omit_if_none = Judged.omit_if_none | {"spans", "plan_check"}

    url: str
    scale: Literal["small", "full"]
    trials: list[TrialResult] = Field(default_factory=list)
    model: str | None = None
    server: ServerFacts | None = None
    spans: SpanCounts | None = None
    plan_check: PlanCheck | None = None

    def trial(self, name: str) -> TrialResult | None:
        """The row of the trial ``name``, if it ran."""
        return next((t for t in self.trials if t.name == name), None)
