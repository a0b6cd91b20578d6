"""run_hw and `seatrial hw`: trial order, the no-GPU path (exit 0, all UNAVAILABLE), flags, run folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from seatrial.cli.app import app
from seatrial.errors import ConfigError
from seatrial.hw import HwConfig, dcgm, run_hw, runner
from seatrial.hw.env import HwEnv
from seatrial.hw.models import TRIAL_NAMES
from seatrial.hw.nvml import Nvml
from seatrial.runs import judge_run
from seatrial.runs.summaries.hw import HwSummary
from seatrial.runs.verdicts import Verdict

from .fake_nvml import FakeNvmlLib

NO_CUDA = "torch 2.13.0+cpu sees no CUDA device"
PARTS = ("ecc", "retired_pages", "row_remap", "xid", "nvlink", "pcie")
SHEET_NAMES = ["inventory", *[f"health.{p}" for p in PARTS],
               "dcgm", "precision.bf16", "precision.fp8", "precision.fp4", "burn", "collectives"]  # fmt: skip


@pytest.fixture
def two_gpus_without_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    env = HwEnv(nvml=Nvml(lib=FakeNvmlLib(count=2), device_count=2), nvml_reason=None, cuda_reason=NO_CUDA)  # type: ignore[arg-type]
    monkeypatch.setattr(runner, "probe", lambda: env)
    monkeypatch.setattr(dcgm.shutil, "which", lambda name: None)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    env = HwEnv(nvml=None, nvml_reason="NVML could not start: NVMLError_LibraryNotFound", cuda_reason=NO_CUDA)
    monkeypatch.setattr(runner, "probe", lambda: env)


def test_nvml_without_cuda_judges_nvml_trials_and_marks_torch_trials_unavailable(
    two_gpus_without_cuda: None,
) -> None:
    report = run_hw(HwConfig(expect_gpus=4, duration_s=1)).report
    rows = [(t.name, t.gpu, t.verdict) for t in report.trials]
    assert rows[0] == ("inventory", None, Verdict.FAIL)
    assert report.trials[0].reason == "2 GPU(s) visible, 4 expected (--expect-gpus)"
    assert [r[:2] for r in rows[1:13]] == [(f"health.{p}", g) for g in (0, 1) for p in PARTS]
    assert dict((r[0], r[2]) for r in rows[1:13]) == {
        "health.ecc": Verdict.PASS, "health.retired_pages": Verdict.UNAVAILABLE,
        "health.row_remap": Verdict.PASS, "health.xid": Verdict.PASS,
        "health.nvlink": Verdict.UNAVAILABLE, "health.pcie": Verdict.PASS,
    }  # fmt: skip
    tail = report.trials[13:]
    assert [t.name for t in tail] == SHEET_NAMES[7:]
    assert all(t.verdict is Verdict.UNAVAILABLE for t in tail)
    sheet = report.to_json()  # the summary.json of this run: read back through its model, unchanged
    assert list(sheet) == ["gpus", "trials", "passed", "not_measured", "counts", "missing_required"]
    assert HwSummary.model_validate(sheet).to_json() == sheet and len(sheet["gpus"]) == 2
    assert [t.reason for t in tail[1:]] == [NO_CUDA] * 5
    assert [g.name for g in report.gpus] == ["NVIDIA H200", "NVIDIA H200"]
    assert report.gpus[0].compute_capability == "9.0" and report.gpus[0].virtualization_mode == "passthrough"
    judged = judge_run(report.trials)
    assert not judged["passed"] and judged["exit_code"] == 1  # inventory FAILed


def test_gpu_selection_and_trial_groups(two_gpus_without_cuda: None) -> None:
    report = run_hw(HwConfig(gpus=[1], trials=["health"], duration_s=1)).report
    assert {t.gpu for t in report.trials} == {1} and len(report.trials) == 6
    with pytest.raises(ConfigError, match="--gpus: GPU 2 does not exist; 2 visible"):
        run_hw(HwConfig(gpus=[2]))
    with pytest.raises(ConfigError, match="--trials: unknown trial 'fp8'"):
        run_hw(HwConfig(trials=["fp8"]))


def test_cli_no_gpu_exits_8_with_every_trial_unavailable(no_gpu: None, tmp_path: Path) -> None:
    """Issue 16 item 4: nothing measured is exit 8, not a success; --require makes it a failure."""
    result = CliRunner().invoke(
        app, ["hw", "--json", str(tmp_path / "hw.json"), "--out", str(tmp_path / "run")]
    )
    assert result.exit_code == 8, result.output
    doc = json.loads((tmp_path / "hw.json").read_text())
    assert doc["gpus"] == [] and [t["name"] for t in doc["trials"]] == SHEET_NAMES
    assert doc["passed"] is False and doc["counts"] == {"UNAVAILABLE": len(SHEET_NAMES)}
    assert [t["name"] for t in doc["not_measured"]] == SHEET_NAMES
    for t in doc["trials"]:
        assert {"name", "gpu", "verdict", "reason", "evidence"} <= set(t) and t["gpu"] is None
        assert t["verdict"] == "UNAVAILABLE" and t["reason"].startswith("no GPU found: NVML could not start")
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == doc
    assert HwSummary.model_validate(doc).to_json() == doc and list(HwSummary.model_validate(doc).to_json()) == list(doc)
    table = (tmp_path / "run" / "table.txt").read_text()
    assert table.count("no GPU found") == 1 and f"({len(SHEET_NAMES)} trials)" in table  # said once
    page = (tmp_path / "run" / "report.html").read_text()
    assert '<section class="seatrial-hw">' in page and not (tmp_path / "run" / "requests.jsonl").exists()
    assert "no GPU could be used" in result.output
    required = CliRunner().invoke(app, ["hw", "--require", "precision.bf16"])
    assert required.exit_code == 1 and "required trial not measured: precision.bf16" in required.output


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU: the no-GPU path is for CI")
def test_real_machine_without_gpu_is_unavailable_everywhere(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "seatrial.cli.app", "hw", "--json", str(tmp_path / "hw.json")]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, timeout=120
    )
    assert proc.returncode == 8, proc.stderr
    doc = json.loads((tmp_path / "hw.json").read_text())
    assert {t["verdict"] for t in doc["trials"]} == {"UNAVAILABLE"} and len(doc["trials"]) == len(SHEET_NAMES)
    assert "no GPU could be used" in proc.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "0,x"], "--gpus: expected 'all' or indices like 0,1; got '0,x'"),
        (["--trials", "inventory,bogus"], "--trials: unknown trial 'bogus'"),
        (["--duration", "0"], "hw: duration_s: Input should be greater than 0"),
    ],
)
def test_bad_flags_are_config_errors(no_gpu: None, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["hw", *args])
    assert isinstance(result.exception, ConfigError) and str(result.exception).startswith(message)


def test_trial_names_are_the_contract() -> None:
    assert TRIAL_NAMES == ("inventory", "health", "dcgm", "precision.bf16", "precision.fp8", "precision.fp4",
                           "burn", "collectives")  # fmt: skip


def test_table_keeps_brackets_in_reasons() -> None:
    """Issue 16 item 16: rich markup ate ``[gpu]`` out of the install hint."""
    from seatrial.cli.hw import hw_sheet
    from seatrial.cli.progress import table_text
    from seatrial.hw import HwReport
    from seatrial.hw.nvml import INSTALL_HINT
    from seatrial.runs import TrialResult

    sheet = HwReport(
        gpus=[], trials=[TrialResult(name="dcgm", verdict=Verdict.UNAVAILABLE, reason=INSTALL_HINT)]
    )
    assert "pip install 'seatrial[gpu]'" in table_text(hw_sheet(sheet), width=200)
