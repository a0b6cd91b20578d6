"""dcgm: DCGM's own results folded into the sheet (3.x and 4.x JSON), and the absent-DCGM path."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from seatrial.hw import dcgm
from seatrial.hw.dcgm import parse_dcgm, run_dcgm
from seatrial.runs.verdicts import Verdict

DCGM3 = {
    "DCGM GPU Diagnostic": {
        "test_categories": [
            {"category": "Deployment", "tests": [{"name": "Denylist", "results": [{"status": "Pass"}]}]},
            {
                "category": "Hardware",
                "tests": [
                    {
                        "name": "GPU Memory",
                        "results": [
                            {"gpu_ids": "0", "status": "Pass"},
                            {
                                "gpu_ids": "1",
                                "status": "Fail",
                                "warnings": [{"warning": "DBE on GPU 1", "error_id": 9}],
                            },
                        ],
                    },
                    {"name": "Diagnostic", "results": [{"gpu_ids": "0", "status": "Skip"}]},
                ],
            },
        ]
    }
}
DCGM4 = {
    "DCGM Diagnostic": {
        "test_categories": [
            {
                "category": "Integration",
                "tests": [
                    {
                        "name": "pcie",
                        "results": [
                            {"entity_group": "GPU", "entity_id": 0, "status": "Warn", "info": ["low bw"]}
                        ],
                        "test_summary": {"status": "Warn"},
                    }
                ],
            }
        ]
    },
    "version": "4.1.1",
}


def test_dcgm3_results_keep_dcgm_status_per_test() -> None:
    got = {t.name: t for t in parse_dcgm(DCGM3, 2)}
    assert list(got) == ["dcgm.denylist", "dcgm.gpu_memory", "dcgm.diagnostic"]
    assert got["dcgm.denylist"].verdict is Verdict.PASS
    assert got["dcgm.gpu_memory"].verdict is Verdict.FAIL and got["dcgm.gpu_memory"].reason == "DBE on GPU 1"
    assert got["dcgm.gpu_memory"].evidence["per_gpu"] == {"0": "Pass", "1": "Fail"}
    assert got["dcgm.diagnostic"].verdict is Verdict.UNAVAILABLE
    assert got["dcgm.diagnostic"].evidence["dcgm_result"] == "Skip"


def test_dcgm4_summary_status_is_used() -> None:
    (only,) = parse_dcgm(DCGM4, 3)
    assert only.name == "dcgm.pcie" and only.verdict is Verdict.REVIEW_REQUIRED
    assert only.reason == "low bw" and only.evidence == {
        "level": 3, "category": "Integration", "dcgm_result": "Warn", "per_gpu": {"0": "Warn"}
    }  # fmt: skip


def test_without_dcgmi_the_trial_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dcgm.shutil, "which", lambda name: None)
    (only,) = run_dcgm(2)
    assert only.name == "dcgm" and only.verdict is Verdict.UNAVAILABLE
    assert only.reason == "dcgmi not found on PATH (DCGM is not installed)"


def fake_dcgmi(tmp_path: Path, script: str, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = tmp_path / "dcgmi"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")


def test_dcgmi_on_path_is_run_with_level_and_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "out.json").write_text(json.dumps(DCGM4))
    fake_dcgmi(tmp_path, f'echo "$@" > {tmp_path}/args; cat {tmp_path}/out.json\n', monkeypatch)
    (only,) = run_dcgm(4)
    assert (tmp_path / "args").read_text().split() == ["diag", "-r", "4", "-j"]
    assert only.name == "dcgm.pcie" and only.evidence["level"] == 4


def test_dcgmi_without_host_engine_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dcgmi(
        tmp_path,
        'echo "Error: unable to establish a connection to the specified host: localhost"; exit 1\n',
        monkeypatch,
    )
    (only,) = run_dcgm(2)
    assert only.verdict is Verdict.UNAVAILABLE
    assert (
        only.reason
        == "dcgmi diag exited 1: Error: unable to establish a connection to the specified host: localhost"
    )
