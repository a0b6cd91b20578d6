"""Ctrl-C in the middle of a level leaves a readable partial run folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.clirun import ctrl_c_reaches

from seatrial.runs.folder import read_jsonl
from seatrial.testing.server import SyntheticConfig, ThreadedServer


def test_sigint_leaves_partial_run_folder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with ThreadedServer(SyntheticConfig(itl_s=0.05)) as srv:
        cmd = [
            sys.executable,
            "-m",
            "seatrial.cli.app",
            "bench",
            "--url",
            srv.url,
            "--workload",
            "random",
            "--input-len",
            "4",
            "--output-len",
            "40",
            "--concurrency",
            "2",
            "--requests",
            "40",
            "--warmup",
            "0",
            "--out",
            str(out),
        ]
        env = {**os.environ, "PYTHONFAULTHANDLER": "1"}  # SIGABRT dumps every thread's stack
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, preexec_fn=ctrl_c_reaches)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait until some requests finished
            rows = read_jsonl(out / "requests.jsonl") if (out / "requests.jsonl").exists() else []
            if len(rows) >= 4:
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGABRT)
            _, err = proc.communicate(timeout=30)
            pytest.fail(
                f"bench still running 30 s after SIGINT ({len(rows)} records then):\n{err.decode()[-6000:]}"
            )
    assert proc.returncode == 130, err.decode()
    assert b"partial run folder" in err
    rows = read_jsonl(out / "requests.jsonl")
    done = [r for r in rows if r["error"] is None]
    cut = [r for r in rows if r["error"] == "interrupted"]
    assert len(done) >= 4 and len(cut) >= 1  # finished and in-flight requests are both on disk
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert json.loads((out / "run.json").read_text())["command"] == "bench"
