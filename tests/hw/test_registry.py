"""The hw trial registry (seatrial.hw.registry) is the one place an hw trial is added: the trial names,
``--trials``, the run and sheet order derive from it, and torch loads only when a GPU trial runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from seatrial.errors import ConfigError
from seatrial.hw import HwConfig, run_hw, runner
from seatrial.hw.context import HwContext
from seatrial.hw.env import HwEnv
from seatrial.hw.models import TRIAL_NAMES
from seatrial.hw.nvml import Nvml
from seatrial.hw.registry import HW_TRIALS, HwTrial, Runner
from seatrial.runs.hwsheet import SUMMARIES, sheet_table
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import Verdict

from .fake_nvml import FakeNvmlLib

NO_CUDA = "torch 2.13.0+cpu sees no CUDA device"


def test_names_and_sheet_lines_derive_from_the_registry() -> None:
    assert tuple(HW_TRIALS) == TRIAL_NAMES and HwConfig().trials == list(HW_TRIALS)
    families = {n.split(".")[0] for n in HW_TRIALS} | set(HW_TRIALS)
    assert set(SUMMARIES) <= families  # a sheet line only for trials that exist
    assert {n for n, t in HW_TRIALS.items() if t.gpu} == {"precision.bf16", "precision.fp8", "precision.fp4",
                                                           "burn", "collectives"}  # fmt: skip


def test_the_registry_loads_no_torch() -> None:
    code = "import sys, seatrial.hw.registry, seatrial.hw.models; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_names_load_nothing_that_measures_and_every_runner_resolves() -> None:
    """``seatrial hw --help`` needs the names only: the registry imports no trial module and no pydantic;
    each entry's module and function exist (resolved here, as a run would)."""
    code = "import sys, seatrial.hw.registry; print(sorted(m for m in sys.modules if m.endswith('_trials') or m == 'pydantic'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    for name, trial in HW_TRIALS.items():
        assert isinstance(trial.run, Runner) and callable(trial.run.resolve()), name


def echo(ctx: HwContext, name: str) -> list[TrialResult]:
    return [TrialResult(name=name, gpu=g, verdict=Verdict.PASS, evidence={"seen": ctx.selected}) for g in ctx.selected]


def test_a_new_trial_is_one_registry_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two new trials, one without torch and one that needs CUDA, on a machine with NVML and no CUDA."""
    env = HwEnv(nvml=Nvml(lib=FakeNvmlLib(count=2), device_count=2), nvml_reason=None, cuda_reason=NO_CUDA)  # type: ignore[arg-type]
    monkeypatch.setattr(runner, "probe", lambda: env)
    monkeypatch.setitem(HW_TRIALS, "echo", HwTrial(echo))
    monkeypatch.setitem(HW_TRIALS, "echo.gpu", HwTrial(echo, gpu=True))
    # "echo" is a group too (it takes echo.gpu), and the sheet keeps registry order
    report = run_hw(HwConfig(trials=["echo", "inventory"])).report
    assert [(t.name, t.gpu, t.verdict) for t in report.trials] == [
        ("inventory", None, Verdict.PASS), ("echo", 0, Verdict.PASS), ("echo", 1, Verdict.PASS),
        ("echo.gpu", None, Verdict.UNAVAILABLE),
    ]  # fmt: skip
    assert report.trials[1].evidence == {"seen": [0, 1], "trial_wall_s": report.trials[1].evidence["trial_wall_s"]}
    assert report.trials[3].reason == NO_CUDA and "trial_wall_s" not in report.trials[3].evidence
    assert [row[0] for row in sheet_table(report.trials).rows] == ["inventory", "echo", "echo", "echo.gpu"]
    with pytest.raises(ConfigError, match="unknown trial 'warp'"):
        run_hw(HwConfig(trials=["warp"]))
