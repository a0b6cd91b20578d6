"""The process group: oom_score_adj reaches grandchildren, the whole group dies, strangers do not,
and a pid whose identity changed is never signalled."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from guard_helpers import pid_alive, wait_for

from seatrial.errors import ConfigError, GuardError
from seatrial.guard import GuardConfig, run_guard
from seatrial.guard.procfs import group_members, read_oom_score_adj, read_stat
from seatrial.guard.procgroup import ProcessGroupTarget


def _started(target: ProcessGroupTarget) -> list[int]:
    """Start and wait until the shell and its sleep grandchild are both in the group."""
    target.start()
    assert target.pid is not None
    wait_for(lambda: len(group_members(target.pid or 0)) == 2, 10, "shell and its child")
    return sorted(m.pid for m in group_members(target.pid))


def test_group_gets_oom_score_adj_and_dies_whole_while_outsider_lives(outsider) -> None:
    target = ProcessGroupTarget(["sh", "-c", "sleep 60; echo never"], oom_score_adj=900)
    pids = _started(target)
    leader = target.pid
    assert leader in pids
    assert [read_oom_score_adj(p) for p in pids] == [900, 900]
    assert all(read_stat(p).sid == leader for p in pids)  # type: ignore[union-attr]
    assert target.exit_code() is None

    evidence = target.kill(graceful_s=0.0)
    assert evidence["signal"] == "SIGKILL" and evidence["exit_code"] == 128 + 9
    assert sorted(m["pid"] for m in evidence["members"]) == pids
    assert not any(pid_alive(p) for p in pids)
    assert read_stat(leader) is None  # reaped after the group was gone
    assert outsider.poll() is None


def test_graceful_kill_uses_sigterm_first() -> None:
    target = ProcessGroupTarget(["sh", "-c", "sleep 60; echo never"], oom_score_adj=1000)
    _started(target)
    evidence = target.kill(graceful_s=5.0)
    assert evidence["signal"] == "SIGTERM" and evidence["exit_code"] == 128 + 15


def test_exit_is_seen_without_reaping_so_the_pid_stays_ours() -> None:
    target = ProcessGroupTarget(["sh", "-c", "exit 3"], oom_score_adj=1000)
    target.start()
    wait_for(lambda: target.exit_code() is not None, 10, "the command to exit")
    assert target.exit_code() == 3
    stat = read_stat(target.pid or 0)
    assert stat is not None and stat.state == "Z"  # still a zombie: nobody can reuse its pid
    assert target.kill()["exit_code"] == 3


def test_changed_identity_refuses_to_signal() -> None:
    target = ProcessGroupTarget(["sleep", "60"], oom_score_adj=1000)
    target.start()
    real_ticks = target.start_ticks
    target.start_ticks = (real_ticks or 0) + 1  # as if the pid now belonged to another process
    with pytest.raises(GuardError, match="pid reused"):
        target.kill()
    time.sleep(0.05)
    assert pid_alive(target.pid or 0)
    target.start_ticks = real_ticks
    assert target.kill()["signal"] == "SIGKILL"


def test_unknown_command_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'no-such-binary-xyz' not found on PATH"):
        ProcessGroupTarget(["no-such-binary-xyz"], oom_score_adj=1000)


def test_guard_run_changes_no_global_oom_policy(tmp_path) -> None:
    """Only the guarded command's own oom_score_adj is set: no sysctl, not the guard's own score."""
    knobs = [
        "sys/vm/overcommit_memory",
        "sys/vm/panic_on_oom",
        "sys/vm/oom_kill_allocating_task",
        "self/oom_score_adj",
    ]
    before = {k: (Path("/proc") / k).read_text() for k in knobs}
    outcome = run_guard(
        GuardConfig(min_available_gib=0.1, history=tmp_path / "h.jsonl"), ["sh", "-c", "exit 0"]
    )
    assert outcome.outcome == "exited"
    assert {k: (Path("/proc") / k).read_text() for k in knobs} == before
