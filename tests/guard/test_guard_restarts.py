"""Crash loops back off instead of spinning; the budget survives across guard runs through the history;
planned restarts (``seatrial guard restart``) never spend it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from guard_helpers import SRC, guard_cli, pid_alive, read_lines, stop_guard, wait_for

from seatrial.guard import GuardConfig, run_guard


def _config(tmp_path: Path, **overrides: object) -> GuardConfig:
    values: dict[str, object] = {
        "min_available_gib": 0.1,
        "restart_margin_gib": 0.0,
        "backoff_s": 0.2,
        "history": tmp_path / "history.jsonl",
    }
    return GuardConfig.model_validate({**values, **overrides})


def test_crash_loop_backs_off_doubling_then_gives_up(tmp_path: Path) -> None:
    config = _config(tmp_path, restart_budget=3)
    outcome = run_guard(config, ["sh", "-c", "exit 3"])
    assert outcome.outcome == "gave-up" and outcome.exit_code == 7
    events = read_lines(config.history)
    assert [e["event"] for e in events] == ["start"] + ["exit", "restart"] * 3 + ["exit", "give-up"]
    restarts = [e for e in events if e["event"] == "restart"]
    assert [r["backoff_s"] for r in restarts] == [0.2, 0.4, 0.8]
    assert [r["consecutive_failures"] for r in restarts] == [1, 2, 3]
    exits = [e for e in events if e["event"] == "exit"]
    assert {e["exit_code"] for e in exits} == {3}
    for crashed, restart in zip(exits, restarts, strict=False):
        assert restart["time_unix_s"] - crashed["time_unix_s"] >= restart["backoff_s"] - 0.002


def test_budget_is_rebuilt_from_history_and_planned_lines_are_free(tmp_path: Path) -> None:
    config = _config(tmp_path, restart_budget=2)
    hour_ago = time.time() - 3600
    old = [{"event": "restart", "planned": False, "time_unix_s": hour_ago + i} for i in range(2)]
    old += [{"event": "restart", "planned": True, "time_unix_s": hour_ago + 10 + i} for i in range(5)]
    config.history.write_text("".join(json.dumps(e) + "\n" for e in old))
    outcome = run_guard(config, ["sh", "-c", "exit 1"])
    new = read_lines(config.history)[len(old) :]
    assert [e["event"] for e in new] == ["start", "exit", "give-up"]
    assert new[0]["budget"]["budget_used"] == 2 and outcome.budget["budget_used"] == 2

    shorter = _config(tmp_path, restart_budget=2, restart_window_s=1800, history=tmp_path / "h2.jsonl")
    shorter.history.write_text(config.history.read_text())  # the same past, a 30 min window
    run_guard(shorter, ["sh", "-c", "exit 1"])
    assert [e["event"] for e in read_lines(shorter.history)[len(new) + len(old) :]][:3] == [
        "start",
        "exit",
        "restart",
    ]


def _restart(history: Path, reason: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "seatrial.cli.app",
            "guard",
            "restart",
            f"--history={history}",
            f"--reason={reason}",
            "--wait=30s",
            "--json=-",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout[: done.stdout.rindex("}") + 1])


def test_planned_restarts_leave_the_budget_untouched(tmp_path: Path, outsider) -> None:
    history = tmp_path / "history.jsonl"
    proc = guard_cli(
        [
            "--min-available-gib=0.1",
            "--restart-margin-gib=0",
            "--restart-budget=1",
            "--backoff=0.1s",
            "--stop-grace=2s",
            f"--history={history}",
            "--",
            "sh",
            "-c",
            "sleep 60",
        ]
    )
    try:
        wait_for(lambda: any(e["event"] == "start" for e in read_lines(history)), 30, "guard start")
        first = _restart(history, "max-num-seqs 6 -> 64")
        second = _restart(history, "second planned")
        assert first["planned"] is True and first["reason"] == "planned: max-num-seqs 6 -> 64"
        assert first["budget"]["budget_used"] == 0 and second["budget"]["budget_used"] == 0
        assert first["target"]["pid"] != second["target"]["pid"]
        # Now a real crash: the one automatic restart the budget allows is still there.
        os.kill(second["target"]["pid"], signal.SIGKILL)
        wait_for(
            lambda: (
                sum(e.get("planned") is False for e in read_lines(history) if e["event"] == "restart") == 1
            ),
            30,
            "automatic restart",
        )
        auto = [e for e in read_lines(history) if e["event"] == "restart"][-1]
        os.kill(auto["target"]["pid"], signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        _, err = stop_guard(proc)
    events = read_lines(history)
    assert [(e["event"], e.get("planned")) for e in events] == [
        ("start", None),
        ("kill", True),
        ("restart", True),
        ("kill", True),
        ("restart", True),
        ("exit", None),
        ("restart", False),
        ("exit", None),
        ("give-up", None),
    ]
    assert [e["exit_code"] for e in events if e["event"] == "exit"] == [137, 137]
    assert [e["signal"] for e in events if e["event"] == "kill"] == ["SIGTERM", "SIGTERM"]
    assert auto["budget"]["budget_used"] == 1 and proc.returncode == 7, err
    assert outsider.poll() is None


def test_sigterm_to_the_guard_stops_its_group_gracefully_and_exits_0(tmp_path: Path, outsider) -> None:
    history = tmp_path / "history.jsonl"
    proc = guard_cli(
        [
            "--min-available-gib=0.1",
            "--stop-grace=5s",
            f"--history={history}",
            "--",
            "sh",
            "-c",
            "sleep 60; echo never",
        ]
    )
    try:
        wait_for(lambda: any(e["event"] == "start" for e in read_lines(history)), 30, "guard start")
        proc.terminate()
        proc.wait(timeout=30)
    finally:
        out, err = stop_guard(proc)
    events = read_lines(history)
    assert [e["event"] for e in events] == ["start", "stop"], err
    stop = events[1]
    assert stop["signal"] == "SIGTERM" and {m["comm"] for m in stop["members"]} == {"sh", "sleep"}
    assert proc.returncode == 0 and "guard stopped" in out
    assert not any(pid_alive(m["pid"]) for m in stop["members"])
    assert not (tmp_path / "history.jsonl.pid").exists() and outsider.poll() is None


def test_backoff_resets_after_a_stable_run(tmp_path: Path) -> None:
    """A server that ran longer than stable_after_s before failing starts the backoff over."""
    config = _config(tmp_path, restart_budget=2, stable_after_s=0.3)
    run_guard(config, ["sh", "-c", "sleep 0.5; exit 1"])
    restarts = [e for e in read_lines(config.history) if e["event"] == "restart"]
    assert [(r["backoff_s"], r["consecutive_failures"]) for r in restarts] == [(0.2, 1), (0.2, 1)]
