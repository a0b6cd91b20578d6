"""The run folder is the one writer of a run's files (issue 44 item 3): a new run refuses a folder that
holds one, files are redacted, and a run opened again (``experiment --resume``) rewrites its summary and
keeps its run.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seatrial.errors import ConfigError
from seatrial.runs import RunFolder, read_jsonl, record


def test_a_run_folder_writes_each_file_once_and_redacted(tmp_path: Path) -> None:
    """A server's error that echoes the credential, a file beside the contract's: neither keeps it."""
    with RunFolder(tmp_path / "run", "bench", {"api_key": "sk-live-0123456789abcdef"}) as folder:
        folder.add_request({"request_id": "r0", "error": "401: Bearer sk-live-0123456789abcdef refused"})
        folder.write_summary({"levels": []})
        folder.write_file("table.txt", "header Authorization: Bearer sk-live-0123456789abcdef\n")
    rows = read_jsonl(tmp_path / "run" / "requests.jsonl")
    assert len(rows) == 1 and "sk-live" not in rows[0]["error"]
    assert "sk-live" not in (tmp_path / "run" / "table.txt").read_text()
    run = (tmp_path / "run" / "run.json").read_text()
    assert json.loads(run)["command"] == "bench" and "sk-live" not in run
    with pytest.raises(ConfigError, match="already holds a run"):
        RunFolder(tmp_path / "run", "bench", {})


def test_a_run_opened_again_rewrites_its_summary_and_keeps_its_run_json(tmp_path: Path) -> None:
    record(tmp_path / "run", "doctor", {"first": True}, {"passed": False})
    before = (tmp_path / "run" / "run.json").read_bytes()
    with pytest.raises(ConfigError, match="holds a run of `doctor`, not of `trial`"):
        RunFolder.existing(tmp_path / "run", "trial")
    again = RunFolder.existing(tmp_path / "run", "doctor")
    again.write_summary({"passed": True})
    again.close()
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == {"passed": True}
    assert (tmp_path / "run" / "run.json").read_bytes() == before
    with pytest.raises(AssertionError):
        again.add_request({"request_id": "r0"})  # a run opened again appends no requests
    with pytest.raises(ConfigError, match="holds no doctor run"):
        RunFolder.existing(tmp_path, "doctor")


def test_a_capacity_folder_over_fresh_starts_reads_as_the_replicas_summary(tmp_path: Path) -> None:
    """``capacity --starts N`` writes command ``capacity`` with the replica's summary: read against the one-start
    model it was "not the capacity summary seatrial writes", so no report (a trial's page) could show it."""
    from seatrial.errors import ConfigError
    from seatrial.runs.folder import RunFolder
    from seatrial.runs.stored import read_run
    from seatrial.runs.summaries.capacity import ReplicaCapacity, StartSearch

    replica = ReplicaCapacity(unit="req/s", starts=[StartSearch(start=1, seed=3, capacity=8.0)], capacity=8.0,
                              confidence=0.9, method="one start", label="one start")  # fmt: skip
    with RunFolder(tmp_path / "run", "capacity", {}, requests=False) as folder:
        folder.write_summary(replica)
    read = read_run(tmp_path / "run")
    assert isinstance(read.summary, ReplicaCapacity) and read.summary.capacity == 8.0
    (tmp_path / "run" / "summary.json").write_text('{"starts": [], "capacity": "lots"}')
    with pytest.raises(ConfigError, match="capacity: Input should be a valid number"):
        read_run(tmp_path / "run")


def test_a_resumable_folder_is_new_only_where_out_is_empty_and_resumed_only_from_its_own_command(tmp_path: Path) -> None:
    """trial and experiment open their folder through this: a fresh run into a used --out would mix two runs, and
    ``--resume`` on another command's folder would continue the wrong thing."""
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty; pass --resume to continue that trial"):
        RunFolder.resumable(tmp_path / "used", "trial", {}, resume=False)
    RunFolder.resumable(tmp_path / "t", "trial", {"plan": 1}, resume=False).close()
    assert json.loads((tmp_path / "t" / "run.json").read_text())["config"] == {"plan": 1}
    RunFolder.resumable(tmp_path / "t", "trial", {"plan": 2}, resume=True).close()
    assert json.loads((tmp_path / "t" / "run.json").read_text())["config"] == {"plan": 1}  # kept as written
    with pytest.raises(ConfigError, match="holds a run of `trial`, not of `experiment`"):
        RunFolder.resumable(tmp_path / "t", "experiment", {}, resume=True)
