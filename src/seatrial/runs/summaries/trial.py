"""``seatrial trial``'s summary: the stage ladder, the candidates kept or dropped, the production profile per
profile, the cross-stage diagnosis, and where a resumed trial took up again."""

from __future__ import annotations

from pydantic import BaseModel, Field

from seatrial.runs.summaries.base import Sparse, SummaryModel


class StageRow(SummaryModel):
    name: str
    verdict: str  # a verdict word; a stage not run is UNAVAILABLE with the reason
    folder: str | None = None  # its run folder, under the trial's
    seconds: float = 0.0
    reason: str | None = None
    reused: bool = False  # a resumed trial took it from its earlier run
    exit_code: int = 0


class CandidateRow(SummaryModel):
    name: str
    dropped: bool = False
    reason: str | None = None  # why it was dropped (the stage says which)
    stage: str | None = None


class ProfileRow(SummaryModel):
    profile: str
    candidate: str | None  # None: no candidate carries this profile's SLO
    peak_req_s: float
    capacity_req_s: float | None = None
    capacity_starts: int = 0
    replicas: int | None = None
    gpus: int | None = None
    concurrency_quota: int | None = None
    slo: dict[str, float] = Field(default_factory=dict)
    attainment: float
    usd_per_1m_output_tokens: float | None = None
    # the other candidates whose capacity differs from this one's over their starts (experiment's rule on log
    # capacity); one that does not is named in ``reason``
    distinguishable_from: list[str] = Field(default_factory=list)
    reason: str = ""
    candidates: list[dict[str, object]] = Field(default_factory=list)  # every candidate's figures for it


class DiagnosisRow(SummaryModel):
    symptom: str
    evidence: str
    source: str  # the file it was read from, under the trial's folder


class TrialSummary(SummaryModel):
    stages: list[StageRow]
    candidates: list[CandidateRow]
    profiles: list[ProfileRow] = Field(default_factory=list)
    diagnosis: list[DiagnosisRow] = Field(default_factory=list)
    resumed_from: str | None = None  # the first stage a resumed trial ran again
    plan_changes: list[str] = Field(default_factory=list)  # what an edited plan changed, and what it re-ran
    exit_code: int = 0
    seconds: float = 0.0  # the trial's wall time in this run
    overhead_s: float = 0.0  # of it, the time outside the stages run (the trial's own work)


class CandidateFit(SummaryModel):
    """Stage 0's memory plan of one candidate: whether it fits, why, and (where checked) its KV cache and ledger."""

    fits: bool
    reason: str
    checked: bool = False
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None  # sequences at max_model_len the KV cache holds (a quotient)
    ledger: str | None = None


class AuditTotals(BaseModel):
    """What a trial's page shows of the audit's report (the checkpoint capability's model; its other fields
    are left to it)."""

    total_bytes: int = 0
    total_params: int = 0
    findings: list[object] = Field(default_factory=list)


class CheckpointSummary(Sparse):
    """Stage 0's run folder (command ``trial-checkpoint``): the audit's report (the checkpoint capability's JSON)
    and each candidate's fit; or, for a GGUF file, its path and size (nothing here reads one)."""

    omit_if_none = frozenset({"audit", "gguf", "bytes"})

    audit: dict[str, object] | None = None
    candidates: dict[str, CandidateFit] = Field(default_factory=dict)
    gguf: str | None = None
    bytes: int | None = None
