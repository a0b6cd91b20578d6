"""The one reader of run folders: run.json and the command's typed summary, for every command that writes one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from seatrial.errors import ConfigError
from seatrial.runs import record
from seatrial.runs.stored import read_run
from seatrial.runs.summaries import BY_COMMAND, Untyped
from seatrial.runs.summaries.trial import CheckpointSummary, TrialSummary

SRC = Path(__file__).resolve().parents[2] / "src" / "seatrial"
#: a command name as the code that opens a run folder spells it
WRITES = re.compile(r'(?:RunFolder(?:\.\w+)?|record|write_folder|running)\((?:[^,()]|\([^()]*\))+, "([a-z][a-z-]*)"')


def _folder(root: Path, command: str | None, summary: dict[str, object]) -> Path:
    root.mkdir()
    if command:
        (root / "run.json").write_text(json.dumps({"command": command, "config": {"k": 1}}))
    (root / "summary.json").write_text(json.dumps(summary))
    return root


def test_every_command_that_writes_a_run_folder_has_a_summary_model() -> None:
    """A new command whose folder no model reads would give pages (and compare, and the trial) a dict again."""
    written = {m for p in SRC.rglob("*.py") for m in WRITES.findall(p.read_text())}
    assert {"bench", "capacity", "hw", "trial", "trial-checkpoint", "sync"} <= written  # the pattern still finds them
    assert written - set(BY_COMMAND) == set()


def test_a_trials_stage_0_folder_reads_as_its_model(tmp_path: Path) -> None:
    """The plan's max_concurrency is a quotient (blocks / blocks a sequence needs): typed an int, stage 0 died
    with a traceback on any candidate with a ``plan:`` whose KV cache did not divide evenly."""
    fit = {"fits": True, "reason": "fits", "checked": True, "kv_cache_tokens": 21504, "max_concurrency": 21.33,
           "ledger": "w 2 GiB"}  # fmt: skip
    written = CheckpointSummary.model_validate({"audit": {"total_bytes": 5}, "candidates": {"a": fit}})
    record(tmp_path / "c", "trial-checkpoint", {"k": 1}, written)
    run = read_run(tmp_path / "c")
    assert isinstance(run.summary, CheckpointSummary) and run.summary.candidates["a"].max_concurrency == 21.33
    assert run.info.command == "trial-checkpoint" and run.info.config == {"k": 1}
    assert set(json.loads((tmp_path / "c" / "summary.json").read_text())) == {"audit", "candidates"}  # no gguf: null


def test_a_field_another_version_added_is_left_out_and_one_it_lacks_is_named(tmp_path: Path) -> None:
    row = {"name": "hw", "verdict": "PASS", "folder": "1-hardware", "seconds": 2.0, "from_v9": {"x": 1}}
    run = read_run(_folder(tmp_path / "a", "trial", {"stages": [row], "candidates": [], "added_in_v9": True}))
    assert isinstance(run.summary, TrialSummary) and run.summary.stages[0].seconds == 2.0
    with pytest.raises(ConfigError, match=r"summary\.json: not the trial summary .*candidates: Field required \(a field missing: written by another"):
        read_run(_folder(tmp_path / "b", "trial", {"stages": []}))
    with pytest.raises(ConfigError, match=r"stages\.0\.seconds: Input should be a valid number[^(]*$"):
        read_run(_folder(tmp_path / "c", "trial", {"stages": [{**row, "seconds": "slow"}], "candidates": []}))


def test_a_folder_without_run_json_is_read_whole_and_shown_by_no_section(tmp_path: Path) -> None:
    run = read_run(_folder(tmp_path / "u", None, {"levels": "not a bench's"}))
    assert isinstance(run.summary, Untyped) and run.info.command is None
    assert run.summary.model_dump() == {"levels": "not a bench's"}


def test_compare_refuses_a_capacity_run_over_fresh_starts_by_name(tmp_path: Path) -> None:
    """The replica's summary has no probes to compare: it crashed compare with a TypeError before the reader."""
    from seatrial.experiment.sources import load_runs

    replica = {"unit": "req/s", "starts": [], "capacity": 8.0, "confidence": 0.9, "method": "m", "label": "one start"}
    with pytest.raises(ConfigError, match="a capacity run over fresh starts; compare takes"):
        load_runs(_folder(tmp_path / "r", "capacity", replica))
