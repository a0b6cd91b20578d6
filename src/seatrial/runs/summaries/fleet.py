"""``seatrial sync`` and ``seatrial doctor`` summaries: what ``summary.json`` and ``--json`` hold.

Fingerprints and manifests stay free-form (their items are whatever a node reports, compared key by key);
everything a table, the report or an exit code reads is a typed field."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from seatrial.runs.summaries.base import NotMeasured, SummaryModel


class StreamBin(SummaryModel):
    files: list[str]
    bytes: int


class TransferPlan(SummaryModel):
    """The plan made from the source manifest before a byte moves (``fleet/transfer.plan_transfer``)."""

    first: StreamBin
    links: list[str] = Field(default_factory=list)
    streams: list[StreamBin] = Field(default_factory=list)
    hardlink_groups: list[list[str]] = Field(default_factory=list)
    linked_outside: list[str] = Field(default_factory=list)
    sparse: list[str] = Field(default_factory=list)
    apparent_bytes: int = 0
    allocated_bytes: int = 0
    travel_bytes: int = 0
    notes: list[str] = Field(default_factory=list)


class StreamResult(SummaryModel):
    """One rsync stream as it ended."""

    name: str
    files: int
    bytes: int
    done_bytes: int
    sent_bytes: int | None = None
    literal_bytes: int | None = None
    resumed: bool = False
    mb_s: float | None = None
    attempts: int = 0
    rc: int | None = None
    error: str | None = None


class SyncDestination(SummaryModel):
    """One destination: its transfer (unless ``--check``), its verification, or where it failed."""

    dest: str
    ok: bool
    path: str | None = None
    cleared: list[str] | None = None
    partial_bytes: int | None = None
    streams: list[StreamResult] = Field(default_factory=list)
    transfer_s: float | None = None
    resent: list[str] | None = None
    differences: list[str] = Field(default_factory=list)
    verify_s: float | None = None
    compared: str | None = None
    size_only: list[str] = Field(default_factory=list)
    error: str | None = None
    stage: Literal["check", "reach", "transfer", "verify"] | None = None
    unreachable: bool | None = None
    bad_input: bool | None = None


class SyncSummary(SummaryModel):
    src: str
    verify: Literal["key", "full"]
    check_only: bool
    plan: TransferPlan
    destinations: list[SyncDestination]
    manifest: dict[str, Any]
    elapsed_s: float
    ok: bool

    def exit_code(self) -> int:
        """0 when every destination is the source; 2 when one was bad input (a file, not a folder), else 4
        when one could not be reached (or its connection dropped), else 1."""
        if self.ok:
            return 0
        rows = self.destinations
        return 2 if any(r.bad_input for r in rows) else 4 if any(r.unreachable for r in rows) else 1


class DoctorSummary(SummaryModel):
    """Every node's fingerprint and the item-by-item comparison (``items``: one ``TrialResult.to_json()``
    row per item)."""

    nodes: list[str]
    unreachable: dict[str, str]
    items: list[dict[str, Any]]
    differences: list[str]
    passed: bool
    counts: dict[str, int]
    not_measured: list[NotMeasured]
    fingerprints: dict[str, Any]

    def exit_code(self) -> int:
        """0 when every node matches, 4 when one could not be reached, else 1 (an item differs)."""
        return 0 if self.passed else 4 if self.unreachable else 1
