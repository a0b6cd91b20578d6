"""``seatrial experiment`` end to end with the synthetic server as the engine (it starts in about a
second): plans, fresh starts in ABBA order, decisions, failed starts, resume. The real-engine proof
is tests/experiment/test_experiment_vllm.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.clirun import invoke

from seatrial.errors import ConfigError
from seatrial.experiment import load_plan, run_experiment, schedule


def plan_doc(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "serve": {
            "command": [sys.executable, "-m", "seatrial.server.synthetic", "--port", "{port}", "--ttft-ms", "5"],
            "ready_timeout_s": 60,
            "stop_grace_s": 10,
        },
        "baseline": {"name": "itl-4", "args": ["--itl-ms", "4"]},
        "treatments": [{"name": "itl-2", "args": ["--itl-ms", "2"]}, {"name": "itl-4-again", "args": ["--itl-ms", "4"]}],
        "workload": {"workload": "random", "input_len": 8, "output_len": 16, "concurrency": [4], "requests": 16,
                     "warmup": 2, "max_lag_ms": 200},
        "starts": 2,
        "decide": {"profiles": {"batch": {"concurrency": 4, "metric": "output_tok_s", "min_gain_pct": 5}},
                   "guardrails": [{"metric": "ttft_ms.p99", "margin_pct": 100}]},
    }  # fmt: skip
    doc.update(over)
    return doc


def write_plan(tmp: Path, doc: dict[str, Any]) -> Path:
    path = tmp / "plan.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_plan_contract_is_validated_with_errors_naming_the_field(tmp_path: Path) -> None:
    bad = plan_doc(starts=1)
    with pytest.raises(ConfigError, match="starts: Input should be greater than or equal to 2"):
        load_plan(write_plan(tmp_path, bad))
    bad = plan_doc(bogus=1)
    with pytest.raises(ConfigError, match="bogus: Extra inputs are not permitted"):
        load_plan(write_plan(tmp_path, bad))
    bad = plan_doc()
    bad["serve"]["command"] = ["vllm", "serve", "/m"]
    with pytest.raises(ConfigError, match=r"serve.command: .*\{port\}"):
        load_plan(write_plan(tmp_path, bad))
    bad = plan_doc()
    bad["decide"]["profiles"]["batch"]["metric"] = "speed"
    with pytest.raises(ConfigError, match="unknown metric 'speed'"):
        load_plan(write_plan(tmp_path, bad))
    bad = plan_doc()
    bad["decide"]["profiles"]["batch"]["concurrency"] = 8
    with pytest.raises(ConfigError, match="concurrency 8 is not a workload level"):
        load_plan(write_plan(tmp_path, bad))


def test_a_two_variable_treatment_is_refused_naming_both_differences(tmp_path: Path) -> None:
    doc = plan_doc(treatments=[{"name": "both", "args": ["--itl-ms", "2"], "env": {"VLLM_X": "1"}}])
    result = invoke(["experiment", str(write_plan(tmp_path, doc)), "--out", str(tmp_path / "out")])
    assert result.code == 2 and not (tmp_path / "out").exists()
    assert "--itl-ms 4 -> 2" in result.output and "env VLLM_X: unset -> 1" in result.output
    assert load_plan(write_plan(tmp_path, {**doc, "allow_multi": True})).treatments[0].name == "both"


def test_interleaved_order_is_abba() -> None:
    plan = load_plan_from(plan_doc(starts=3))
    assert schedule(plan) == [
        ("itl-4", 0), ("itl-2", 0), ("itl-4-again", 0),
        ("itl-4-again", 1), ("itl-2", 1), ("itl-4", 1),
        ("itl-4", 2), ("itl-2", 2), ("itl-4-again", 2),
    ]  # fmt: skip
    shuffled = schedule(load_plan_from(plan_doc(starts=3, order="random", seed=4)))
    assert sorted(shuffled) == sorted(schedule(plan)) and shuffled != schedule(plan)


def load_plan_from(doc: dict[str, Any]) -> Any:
    from seatrial.experiment.plan import ExperimentPlan

    return ExperimentPlan.model_validate(doc)


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("exp")
    result = invoke(["experiment", str(write_plan(tmp, plan_doc())), "--out", str(tmp / "out"),
                     "--json", str(tmp / "e.json")])  # fmt: skip
    assert result.code == 0, result.output
    return tmp / "out", json.loads((tmp / "e.json").read_text())


def test_faster_tokens_are_adopted_and_the_aa_control_is_not(ran: tuple[Path, dict[str, Any]]) -> None:
    out, summary = ran
    decisions = {d["treatment"]: d for d in summary["decisions"]}
    fast, aa = decisions["itl-2"], decisions["itl-4-again"]
    assert fast["verdict"] == "ADOPT", fast
    assert fast["ci_pct"][0] > fast["threshold_pct"] >= 5 and fast["gain_pct"] > 30
    assert fast["guardrails"][0]["status"] == "NON_INFERIOR" and fast["starts"] == {
        "baseline": 2,
        "treatment": 2,
    }
    assert aa["aa_control"] is True and aa["verdict"] in ("NO_EFFECT", "INCONCLUSIVE"), aa
    assert fast["aa_spread_pct"] is not None and fast["threshold_pct"] == max(5.0, fast["aa_spread_pct"])
    assert json.loads((out / "summary.json").read_text()) == summary


def test_every_start_is_a_fresh_server_measured_as_bench_measures(ran: tuple[Path, dict[str, Any]]) -> None:
    out, summary = ran
    settings = {s["name"]: s for s in summary["settings"]}
    assert [s["name"] for s in summary["settings"]] == ["itl-4", "itl-2", "itl-4-again"]
    for s in settings.values():
        assert [st["index"] for st in s["starts"]] == [0, 1]
        for st in s["starts"]:
            folder = out / st["folder"]
            assert st["ok"] and st["startup_s"] > 0 and st["stop"]["signal"] == "SIGTERM"
            assert {"run.json", "requests.jsonl", "server_metrics.jsonl", "summary.json", "server.log"} <= {
                p.name for p in folder.iterdir()
            }
            assert [lv["concurrency"] for lv in st["levels"]] == [4] and st["levels"][0]["valid"]
    stats = settings["itl-4"]["levels"][0]["stats"]
    tok = stats["output_tok_s"]
    assert len(tok["per_start"]) == 2 and tok["mean"] > 0 and tok["cv"] is not None
    ttft = stats["ttft_ms.p99"]
    assert ttft["pooled_n"] == 32 and ttft["within_start_sd"] is not None  # 2 starts x 16 requests, pooled
    page = (out / "report.html").read_text()
    assert "Decisions" in page and "ADOPT" in page and page.count("<svg") >= 1
    run = json.loads((out / "run.json").read_text())
    assert run["command"] == "experiment" and run["config"]["plan_sha256"] == summary["plan_sha256"]


def test_a_start_that_cannot_come_up_is_recorded_and_retried_once(tmp_path: Path) -> None:
    doc = plan_doc(
        treatments=[{"name": "broken", "args": ["--itl-ms", "4", "--no-such-flag"]}],
        decide={"profiles": {"batch": {"concurrency": 4}}},
    )
    result = invoke(["experiment", str(write_plan(tmp_path, doc)), "--out", str(tmp_path / "out")])
    assert result.code == 5 and "no start of broken came up" in result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    broken = next(s for s in summary["settings"] if s["name"] == "broken")
    for st in broken["starts"]:
        assert st["ok"] is False and len(st["attempts"]) == 2  # tried, then once more
        assert "exited with 2 during start-up" in st["attempts"][0]["error"]
        assert "unrecognized arguments: --no-such-flag" in st["attempts"][0]["error"]  # the log's tail
    assert summary["failed_settings"] == ["broken"] and summary["decisions"][0]["verdict"] == "INCONCLUSIVE"


def test_an_interrupted_plan_is_readable_and_resumes_where_it_stopped(tmp_path: Path) -> None:
    plan = load_plan(
        write_plan(tmp_path, plan_doc(treatments=[{"name": "itl-2", "args": ["--itl-ms", "2"]}]))
    )
    out = tmp_path / "out"
    seen: list[str] = []

    def interrupt_at_the_third_start(line: str) -> None:
        seen.append(line)
        if line.startswith("[3/4]"):
            raise KeyboardInterrupt

    from seatrial.errors import RunInterrupted

    with pytest.raises(RunInterrupted, match="--resume"):
        run_experiment(plan, out, log=interrupt_at_the_third_start)
    partial = json.loads((out / "summary.json").read_text())
    assert partial["interrupted"] is True and partial["complete"] is False
    assert sum(len(s["starts"]) for s in partial["settings"]) == 2
    with pytest.raises(ConfigError, match="not empty; pass --resume"):
        run_experiment(plan, out, log=lambda m: None)
    resumed: list[str] = []
    summary = run_experiment(plan, out, log=resumed.append, resume=True)
    assert summary["complete"] and [line for line in resumed if line.startswith("[")] == [
        "[3/4] itl-2 start 2 of 2",
        "[4/4] itl-4 start 2 of 2",
    ]
    assert all(len(s["starts"]) == 2 for s in summary["settings"])
    other = load_plan(write_plan(tmp_path, plan_doc()))
    with pytest.raises(ConfigError, match="another plan"):
        run_experiment(other, out, log=lambda m: None, resume=True)
