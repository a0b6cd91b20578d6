"""``--container NAME``: the docker commands the guard builds, its error when the CLI fails, and the
whole loop against a stand-in docker CLI that drives a real process as the container."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from guard_helpers import pid_alive, read_lines, wait_for, write_meminfo

from seatrial.errors import GuardError
from seatrial.guard import GuardConfig, run_guard
from seatrial.guard.container import ContainerTarget, inspect_cmd, kill_cmd, start_cmd, stop_cmd, top_cmd

FAKE = Path(__file__).resolve().parent / "fake_docker.py"


def test_docker_commands() -> None:
    assert kill_cmd("vllm-tp2") == ["docker", "kill", "--signal", "KILL", "vllm-tp2"]
    assert stop_cmd("vllm-tp2", 29.6) == ["docker", "stop", "--time", "30", "vllm-tp2"]
    assert start_cmd("vllm-tp2") == ["docker", "start", "vllm-tp2"]
    assert top_cmd("vllm-tp2") == ["docker", "top", "vllm-tp2", "-eo", "pid"]
    assert inspect_cmd("vllm-tp2", "{{.State.Pid}}") == [
        "docker",
        "inspect",
        "--format",
        "{{.State.Pid}}",
        "vllm-tp2",
    ]


@pytest.mark.skipif(shutil.which("docker") is None, reason="no docker CLI on this machine")
def test_real_docker_cli_without_engine_gives_a_clear_error() -> None:
    with pytest.raises(GuardError) as info:
        ContainerTarget("seatrial-no-such", 1000).start()
    message = str(info.value)
    assert message.startswith("--container: `docker inspect --format {{.Id}} seatrial-no-such`")
    assert "failed:" in message and ("daemon" in message or "No such" in message)


def test_missing_docker_cli_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GuardError, match="--container: the docker CLI is not on PATH"):
        ContainerTarget("srv", 1000).start()


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    state = tmp_path / "docker-state"
    state.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "docker"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DOCKER_DIR", str(state))
    yield state
    pid_file = state / "pid"
    if pid_file.exists() and pid_alive(pid := int(pid_file.read_text())):
        os.kill(pid, signal.SIGKILL)  # never leave the stand-in container running


def test_container_is_killed_on_the_line_restarted_and_given_up(fake_docker: Path, tmp_path: Path) -> None:
    subprocess.run(["docker", "start", "srv"], check=True)  # it runs before the guard watches it
    first_pid = int((fake_docker / "pid").read_text())
    meminfo = tmp_path / "meminfo"
    write_meminfo(meminfo, 40)
    config = GuardConfig(
        min_available_gib=12,
        restart_margin_gib=2,
        restart_budget=1,
        backoff_s=0.1,
        history=tmp_path / "h.jsonl",
        meminfo_path=meminfo,
    )

    def pressure_then_crash() -> None:
        events = lambda: [e["event"] for e in read_lines(config.history)]  # noqa: E731
        wait_for(lambda: "start" in events(), 10, "start")
        write_meminfo(meminfo, 11)  # under the 12 GiB line: the guard must kill the container
        wait_for(lambda: "kill" in events(), 10, "kill")
        write_meminfo(meminfo, 14.5)  # back above line + margin: the restart may go ahead
        wait_for(lambda: "restart" in events(), 10, "restart")
        (fake_docker / "exitcode").write_text("137")  # then the container crashes (the engine's record)
        os.kill(int((fake_docker / "pid").read_text()), 9)

    thread = threading.Thread(target=pressure_then_crash)
    thread.start()
    outcome = run_guard(config, container="srv")
    thread.join()

    events = read_lines(config.history)
    assert [e["event"] for e in events] == ["start", "kill", "restart", "exit", "give-up"]
    kill = events[1]
    assert kill["target"] == {**kill["target"], "kind": "container", "container": "srv", "pid": first_pid}
    assert kill["members"][0]["pid"] == first_pid and kill["members"][0]["oom_score_adj"] == 1000
    assert kill["signal"] == "docker kill" and kill["exit_code"] == 137 and kill["mem_available_gib"] == 11
    assert events[2]["target"]["pid"] != first_pid and events[3]["exit_code"] == 137
    assert outcome.outcome == "gave-up" and not pid_alive(first_pid)
    calls = [json.loads(x) for x in (fake_docker / "argv.log").read_text().splitlines()]
    cid = kill["target"]["container_id"]
    assert len(cid) == 48 and ["inspect", "--format", "{{.Id}}", "srv"] in calls
    assert ["kill", "--signal", "KILL", cid] in calls and calls.count(["start", cid]) == 1  # by ID


def test_stopping_the_guard_leaves_a_watched_container_running(fake_docker: Path, tmp_path: Path) -> None:
    subprocess.run(["docker", "start", "srv"], check=True)
    pid = int((fake_docker / "pid").read_text())
    config = GuardConfig(min_available_gib=0.1, history=tmp_path / "h.jsonl")

    def stop_the_guard() -> None:
        wait_for(lambda: any(e["event"] == "start" for e in read_lines(config.history)), 10, "start")
        os.kill(os.getpid(), signal.SIGTERM)  # the guard's handler is installed in this process

    thread = threading.Thread(target=stop_the_guard)
    thread.start()
    outcome = run_guard(config, container="srv")
    thread.join()
    assert outcome.outcome == "stopped" and outcome.exit_code == 0
    stop = read_lines(config.history)[-1]
    assert stop["event"] == "stop" and "container left running" in stop["reason"]
    assert pid_alive(pid)
    calls = [json.loads(x)[0] for x in (fake_docker / "argv.log").read_text().splitlines()]
    assert "kill" not in calls and "stop" not in calls


def test_a_container_recreated_under_the_same_name_is_never_touched(
    fake_docker: Path, tmp_path: Path
) -> None:
    """Issue 16 item 12: after the watched container is gone, a new one named ``srv`` is another container."""
    subprocess.run(["docker", "start", "srv"], check=True)
    config = GuardConfig(min_available_gib=0.1, restart_budget=1, backoff_s=0.1, history=tmp_path / "h.jsonl")

    def recreate() -> None:
        wait_for(lambda: any(e["event"] == "start" for e in read_lines(config.history)), 10, "start")
        os.kill(int((fake_docker / "pid").read_text()), 9)  # the watched container dies ...
        (fake_docker / "id").write_text("f" * 48)  # ... and a new container takes its name
        subprocess.run(["docker", "start", "srv"], check=True)

    thread = threading.Thread(target=recreate)
    thread.start()
    with pytest.raises(GuardError, match="No such container"):
        run_guard(config, container="srv")
    thread.join()
    new_pid = int((fake_docker / "pid").read_text())
    assert pid_alive(new_pid)  # the new container was not killed, stopped or restarted
    calls = [json.loads(x) for x in (fake_docker / "argv.log").read_text().splitlines()]
    assert not [c for c in calls if c[0] in ("kill", "stop") or (c[0] == "start" and c[-1] != "srv")][1:]


def test_oom_score_adj_only_for_the_containers_own_processes(fake_docker: Path, tmp_path: Path) -> None:
    """A pid ``docker top`` lists that started before the container's init (a reused pid, a stranger)
    is not written."""
    subprocess.run(["docker", "start", "srv"], check=True)
    stranger = subprocess.Popen(["sleep", "60"])  # started after the init: a member ...
    older = os.getpid()  # ... this test process started long before it: a stranger
    (fake_docker / "extra_pids").write_text(f"{stranger.pid} {older}")
    try:
        target = ContainerTarget("srv", 1000)
        target.start()
        init = int((fake_docker / "pid").read_text())
        assert target.oom_score_adj_set == [init, stranger.pid]
        assert Path(f"/proc/{os.getpid()}/oom_score_adj").read_text().strip() != "1000"
    finally:
        stranger.kill()
        stranger.wait()
