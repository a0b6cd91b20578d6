"""A run folder read back, typed both ways: its ``run.json`` (:class:`RunInfo`) and its command's summary model
(``runs.summaries``). The one reader of run folders: the report, compare and the trial read through it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from seatrial.errors import ConfigError
from seatrial.runs.folder import read_run_json
from seatrial.runs.summaries import typed
from seatrial.runs.summaries.base import SummaryModel


class RunInfo(BaseModel):
    """``run.json``: the command, its config, the environment (no secrets), and what a command adds (a trial's
    plan fingerprints, an experiment's plan)."""

    model_config = ConfigDict(extra="allow")

    command: str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    environment: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class StoredRun:
    path: Path
    info: RunInfo
    summary: SummaryModel


def read_run(run_dir: Path) -> StoredRun:
    """A finished or partial run folder: its ``run.json`` (empty where it has none) and ``summary.json`` as its
    command's model; ConfigError naming the file when either cannot be read or is not what seatrial writes."""
    info_path, summary_path = run_dir / "run.json", run_dir / "summary.json"
    raw_info = read_run_json(info_path) if info_path.exists() else {}
    try:
        info = RunInfo.model_validate(raw_info)
    except ValueError as exc:
        raise ConfigError(f"{info_path}: not the run.json seatrial writes: {exc}") from None
    raw_summary = read_run_json(summary_path)  # its own ConfigError names the file
    try:
        summary = typed(info.command, raw_summary)
    except ConfigError as exc:
        raise ConfigError(f"{summary_path}: not the {info.command} summary seatrial writes: {exc}") from None
    return StoredRun(run_dir, info, summary)
