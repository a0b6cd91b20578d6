"""A whole trial against the synthetic server (fresh server processes per start, continuous batching with 2 and
8 slots): Ctrl-C in stage 5 is exit 130 with a resumable folder; ``--resume`` reuses stages 0-4 without running
them again and ends in the profile; an edited peak re-runs the decision alone and says so."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.ckptgen.tiny import write_tiny_checkpoint
from tests.clirun import invoke
from tests.trial.plans import synthetic_plan, write_plan

STAGE_NAMES = ["checkpoint", "hardware", "io", "fleet", "serving", "capacity", "decision"]


def _interrupted_in_capacity(plan: Path, out: Path) -> tuple[int, str]:
    """The CLI in its own process, sent SIGINT (what Ctrl-C sends) once stage 5 has launched its first server."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "seatrial.cli.app", "trial", str(plan), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)  # fmt: skip
    seen = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if "launching the server" in line and any("[5/6] capacity" in s for s in seen):
                proc.send_signal(signal.SIGINT)
                break
        rest, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, "".join(seen) + (rest or "")


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("trial")
    plan = write_plan(tmp / "plan.yaml", synthetic_plan(write_tiny_checkpoint(tmp / "ckpt")))
    out = tmp / "out"
    code, output = _interrupted_in_capacity(plan, out)
    first = json.loads((out / "summary.json").read_text())
    kept = {p: p.stat().st_mtime_ns for p in out.glob("[0-4]-*/**/*") if p.is_file()}
    resumed = invoke(["trial", str(plan), "--out", str(out), "--resume", "--json", str(tmp / "resumed.json")])
    return {"tmp": tmp, "plan": plan, "out": out, "code": code, "output": output, "first": first, "kept": kept,
            "resumed": resumed, "second": json.loads((tmp / "resumed.json").read_text())}  # fmt: skip


def test_ctrl_c_in_stage_5_is_exit_130_with_stages_0_to_4_done(trial: dict[str, Any]) -> None:
    assert trial["code"] == 130, trial["output"][-3000:]
    rows = {s["name"]: s for s in trial["first"]["stages"]}
    assert [s["name"] for s in trial["first"]["stages"]] == STAGE_NAMES
    assert rows["capacity"]["reason"] == "interrupted: continue with --resume" and rows["capacity"]["exit_code"] == 130
    assert rows["decision"]["reason"] == "not run: the trial stopped at capacity"
    assert [rows[s]["verdict"] for s in ("checkpoint", "io", "serving")] == ["PASS", "PASS", "PASS"]
    assert rows["fleet"]["verdict"] == "UNAVAILABLE" and "one node" in rows["fleet"]["reason"]  # said, not skipped
    assert trial["first"]["exit_code"] == 130


def test_the_misfit_is_dropped_at_stage_0_with_the_plans_reason_and_never_started(trial: dict[str, Any]) -> None:
    misfit = next(c for c in trial["second"]["candidates"] if c["name"] == "misfit")
    assert misfit["dropped"] and misfit["stage"] == "checkpoint" and "exceed the GPU budget" in misfit["reason"]
    assert not (trial["out"] / "4-serving" / "misfit").exists()
    assert not list((trial["out"] / "5-capacity").glob("misfit--*"))
    plans = json.loads((trial["out"] / "0-checkpoint" / "summary.json").read_text())["candidates"]
    assert plans["eight"]["fits"] and plans["eight"]["kv_cache_tokens"] > 0 and not plans["two"]["checked"]


def test_resume_reuses_stages_0_to_4_without_running_them_again(trial: dict[str, Any]) -> None:
    assert trial["resumed"].code == 0, trial["resumed"].output[-3000:]
    second = trial["second"]
    assert [s["reused"] for s in second["stages"]] == [True] * 5 + [False, False]
    assert second["resumed_from"] == "capacity" and second["plan_changes"] == []
    now = {p: p.stat().st_mtime_ns for p in trial["kept"]}
    assert now == trial["kept"]  # not one file of stages 0-4 written again (no server started for them)
    assert "(reused from the earlier run)" in trial["resumed"].output


def test_the_profile_picks_the_candidate_that_carries_the_peak_on_fewer_replicas(trial: dict[str, Any]) -> None:
    (p,) = trial["second"]["profiles"]
    figures = {c["name"]: c for c in p["candidates"]}
    assert set(figures) == {"two", "eight"}
    assert figures["eight"]["capacity_req_s"] > figures["two"]["capacity_req_s"]
    assert p["candidate"] == "eight" and p["capacity_req_s"] == figures["eight"]["capacity_req_s"]
    assert p["replicas"] == math.ceil(50 / p["capacity_req_s"] - 1e-9) and p["gpus"] == p["replicas"]
    assert p["capacity_starts"] == 2 and p["concurrency_quota"] >= 1 and p["usd_per_1m_output_tokens"] > 0
    assert p["slo"] == {"ttft_ms": 150.0} and p["attainment"] == 0.5
    rows = json.loads((trial["out"] / "5-capacity" / "eight--chat" / "summary.json").read_text())
    assert p["capacity_req_s"] == rows["capacity"]  # the fresh replica's bound over its starts, as capacity wrote it


def test_the_report_opens_with_the_ladder_then_profiles_diagnosis_and_each_stage(trial: dict[str, Any]) -> None:
    page = (trial["out"] / "report.html").read_text()
    order = ["<h2>Stages</h2>", "<h2>Production profiles</h2>", "<h2>Diagnosis</h2>", "id='stage-checkpoint'",
             "id='stage-serving'", "id='stage-capacity'"]  # fmt: skip
    at = [page.index(h) for h in order]
    assert at == sorted(at)
    assert "href='#stage-capacity'" in page and "4-serving/eight/accept/" in page and "<h2>Capacity</h2>" in page


def test_an_edited_peak_reruns_the_decision_alone_and_names_the_change(trial: dict[str, Any]) -> None:
    plan = yaml.safe_load(trial["plan"].read_text())
    plan["profiles"][0]["peak_req_s"] = 300
    edited = write_plan(trial["tmp"] / "edited.yaml", plan)
    got = invoke(["trial", str(edited), "--out", str(trial["out"]), "--resume", "--json", str(trial["tmp"] / "e.json")])
    assert got.code == 0, got.output[-3000:]
    third = json.loads((trial["tmp"] / "e.json").read_text())
    assert third["plan_changes"] == ["changed: profiles[chat].peak_req_s", "run again: decision"]
    assert [s["reused"] for s in third["stages"]] == [True] * 6 + [False]
    (p,) = third["profiles"]
    assert p["peak_req_s"] == 300 and p["replicas"] == math.ceil(300 / p["capacity_req_s"] - 1e-9)
