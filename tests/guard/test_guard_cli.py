"""``seatrial guard`` through the real entry point: exit codes, error messages, the plan refusal."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from guard_helpers import read_lines

from seatrial.cli.app import main
from seatrial.guard import LaunchFit, LaunchSpec, preflight


def _run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> tuple[int, str, str]:
    """Run ``seatrial guard ARGS`` through ``main`` (error mapping included); output with rich's
    line wrapping undone."""
    monkeypatch.setattr(sys, "argv", ["seatrial", "guard", *args])
    try:
        main()
        code = 0
    except SystemExit as info:
        code = int(info.code or 0)
    captured = capsys.readouterr()
    return code, " ".join(captured.out.split()), " ".join(captured.err.split())


def test_guarded_command_after_double_dash_runs_and_writes_json(monkeypatch, capsys, tmp_path: Path) -> None:
    summary = tmp_path / "s.json"
    code, out, err = _run(
        monkeypatch,
        capsys,
        "--min-available-gib=0.1",
        f"--history={tmp_path / 'h.jsonl'}",
        f"--json={summary}",
        "--",
        "sh",
        "-c",
        "exit 0",
    )
    assert code == 0 and "guard exited: exited with code 0" in out
    assert "start pgid" in err and "exit pgid" in err and "exited with code 0 (MemAvailable" in err
    assert json.loads(summary.read_text())["outcome"] == "exited"
    start = read_lines(tmp_path / "h.jsonl")[0]
    assert start["target"]["command"] == ["sh", "-c", "exit 0"]
    assert start["guard"]["min_available_gib"] == 0.1 and start["guard"]["oom_score_adj"] == 1000


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--poll-ms=0", "--", "true"], "--poll-ms: Input should be greater than 0"),
        (["--restart-window=soon", "--", "true"], "--restart-window: 'soon' is not a duration"),
        (["--container=srv", "--", "true"], "exactly one"),
        ([], "exactly one"),
        (
            ["--oom-score-adj=2000", "--", "true"],
            "--oom-score-adj: Input should be less than or equal to 1000",
        ),
    ],
)
def test_bad_input_is_a_config_error_naming_the_flag(monkeypatch, capsys, args, message) -> None:
    code, _, err = _run(monkeypatch, capsys, *args)
    assert code == 2 and message in err


def test_restart_without_a_running_guard(monkeypatch, capsys, tmp_path: Path) -> None:
    code, _, err = _run(monkeypatch, capsys, "restart", f"--history={tmp_path / 'h.jsonl'}")
    assert code == 7 and "no running guard uses this history" in err


def test_plan_refusal_prints_the_ledger_and_records_it(monkeypatch, capsys, tmp_path: Path) -> None:
    seen: list[LaunchSpec] = []

    def predict_launch(spec: LaunchSpec, protection_line_bytes: int) -> LaunchFit:
        seen.append(spec)
        return LaunchFit(
            fits=False,
            ledger="weights 84.23 GiB + KV 22.55 GiB > budget 84.70 GiB",
            changes=["convert PLE to FP8", "--gpu-memory-utilization 0.70"],
        )

    monkeypatch.setattr(preflight, "plan_predictor", predict_launch)
    history = tmp_path / "h.jsonl"
    server = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(tmp_path),
        "--gpu-memory-utilization",
        "0.9",
        "--max-model-len",
        "16384",
        "--tensor-parallel-size",
        "2",
    ]
    code, _, err = _run(monkeypatch, capsys, f"--history={history}", "--", *server)
    assert code == 7
    assert "refusing to launch" in err and "weights 84.23 GiB" in err and "convert PLE to FP8" in err
    assert (seen[0].model_dir, seen[0].max_model_len, seen[0].tensor_parallel_size) == (tmp_path, 16384, 2)
    assert [e["event"] for e in read_lines(history)] == ["refuse"]


def test_force_launches_despite_the_plan_and_records_it(monkeypatch, capsys, tmp_path: Path) -> None:
    def predict_launch(spec: LaunchSpec, protection_line_bytes: int) -> LaunchFit:
        return LaunchFit(fits=False, ledger="peak 130 GiB > 121 GiB", changes=["--max-model-len 8192"])

    monkeypatch.setattr(preflight, "plan_predictor", predict_launch)
    history = tmp_path / "h.jsonl"
    # This interpreter has no vLLM, so the forced launch exits 1 at once; budget 0 ends the run there.
    server = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(tmp_path)]
    code, _, err = _run(
        monkeypatch,
        capsys,
        "--force",
        "--restart-budget=0",
        "--min-available-gib=0.1",
        f"--history={history}",
        "--",
        *server,
    )
    events = read_lines(history)
    assert [e["event"] for e in events] == ["start", "exit", "give-up"]
    plan = events[0]["plan"]
    assert plan["checked"] and plan["fits"] is False and plan["forced"] is True
    assert plan["changes"] == ["--max-model-len 8192"] and plan["spec"]["model_dir"] == str(tmp_path)
    assert code == 7 and "restart budget spent (0 per 6 h)" in err
