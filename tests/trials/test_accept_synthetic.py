"""``seatrial accept`` end to end against the in-process synthetic server (no engine needed).

The synthetic server streams every answer (even when ``stream`` is false), never counts a prefix
hit, never queues and states no KV layout: each shows up as the verdict the rules call for.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.servers import synthetic_server
from typer.testing import CliRunner

from report.chromium import drawn_pixels, screenshot
from seatrial.cli.app import app
from seatrial.runs.folder import read_jsonl
from seatrial.runs.result import TrialResult
from seatrial.runs.summaries.accept import AcceptSummary
from seatrial.testing.server import SyntheticConfig, ThreadedServer
from seatrial.trials import run_accept

PROFILE = """
slo: {ttft_ms: 5000, percentile: 50}
max_lag_ms: 1000
trials:
  basic: {requests: 4, input_len: 8, output_len: 4}
  context: {short_len: 8, long_len: 64, output_len: 4, requests: 20}
  mixed: {rounds: 3, short_requests: 4, short_concurrency: 2, short_input_len: 8, short_output_len: 4,
          long_input_len: 64, long_concurrency: 1}
  saturation: {ladder: [1, 2], min_requests: 20, warmup: 0, input_len: 8, output_len: 4, max_concurrency: 3}
  prefix-cache: {num_prefixes: 2, prefix_len: 32, questions_per_prefix: 3, question_len: 8, output_len: 2,
                 concurrency: 2, block_size: 16}
  kv-tier: {session_len: 32, question_len: 8, output_len: 2, concurrency: 2}
"""


server = synthetic_server(itl_s=0.002, ttft_s=0.005)


@pytest.fixture(scope="module")
def run(server: ThreadedServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("accept")
    (tmp / "p.yaml").write_text(PROFILE)
    summary = run_accept(server.url, profile=tmp / "p.yaml", scale="small", out_dir=tmp / "run")
    return tmp / "run", summary


def by_name(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in summary["trials"]}


def test_summary_contract_and_run_folder(run: tuple[Path, dict[str, Any]]) -> None:
    folder, summary = run
    assert json.loads((folder / "summary.json").read_text()) == json.loads(json.dumps(summary))
    assert [t["name"] for t in summary["trials"]] == [
        "basic",
        "context",
        "mixed",
        "saturation",
        "prefix-cache",
        "kv-tier",
    ]
    for t in summary["trials"]:
        assert {"name", "verdict", "evidence", "reasons", "samples"} <= t.keys() and t["reasons"]
    rows = read_jsonl(folder / "requests.jsonl")
    assert len(rows) > 60 and {r["kind"] for r in rows} >= {"short", "long", "shared", "unique", "cold"}
    assert summary["passed"] is False and summary["scale"] == "small"  # basic fails, below
    saved = json.loads((folder / "summary.json").read_text())
    typed = AcceptSummary.model_validate(saved)  # summary.json through its model, and back unchanged
    assert typed.to_json() == saved and list(typed.to_json()) == list(saved)
    assert list(saved) == ["url", "scale", "trials", "model", "server", "passed", "not_measured", "counts",
                           "missing_required"]  # fmt: skip
    assert typed.trial("basic") == TrialResult.model_validate(saved["trials"][0])


def test_basic_names_the_failed_check(run: tuple[Path, dict[str, Any]]) -> None:
    basic = by_name(run[1])["basic"]
    checks = basic["evidence"]["checks"]
    assert checks["health"]["ok"] and checks["models"]["listed"] == ["synthetic"]
    assert checks["chat_stream"] == checks["chat_stream"] | {"ok": True, "output_tokens": 4, "asked": 4}
    assert not checks["completion"]["ok"]  # a streamed body where JSON was asked
    assert basic["verdict"] == "FAIL" and basic["reasons"] == ["failed: completion"]
    assert basic["samples"]["requests"] == 4


def test_a_chat_stream_whose_tokens_carry_no_text_still_works(tmp_path: Path) -> None:
    """A model that emits only special tokens (vLLM skips their text; the demo's dummy weights do it for
    some prompts) streams a chat answer with no content: the endpoint works, its TTFT is not measured."""
    (tmp_path / "p.yaml").write_text(PROFILE)
    with ThreadedServer(SyntheticConfig(itl_s=0.002, ttft_s=0.005, fault="textless")) as srv:
        summary = run_accept(srv.url, profile=tmp_path / "p.yaml", trials=["basic"], out_dir=tmp_path / "run")
    chat = by_name(summary)["basic"]["evidence"]["checks"]["chat_stream"]
    assert chat["ok"] and chat["output_tokens"] == 4 and chat["ttft_ms"] is None and chat["error"] is None
    assert "carried no text" in chat["note"]
    rows = {r["request_id"]: r for r in read_jsonl(tmp_path / "run" / "requests.jsonl")}
    # the load client still refuses to time such a request: no token event, no TTFT
    assert [r["error"] for r in rows.values() if r["kind"] == "chat"] == ["stream carried no output token"]


def test_prefix_cache_without_hits_fails_functionally(run: tuple[Path, dict[str, Any]]) -> None:
    pc = by_name(run[1])["prefix-cache"]
    ev = pc["evidence"]
    assert pc["functional"] == "FAIL" == pc["verdict"] and pc["performance"] == "INCONCLUSIVE"
    assert ev["hits"] == 0 == ev["control_hits"] and ev["queries"] > 0 and ev["hit_rate"] == 0
    assert ev["expected_hit_rate"] > 0.5 and ev["block_size_source"] == "profile"
    assert pc["samples"] == {"warm_requests": 4, "cold_requests": 2, "pairs": 4}


def test_saturation_ladder_extends_and_reports_steps(run: tuple[Path, dict[str, Any]]) -> None:
    sat = by_name(run[1])["saturation"]
    steps = sat["evidence"]["steps"]
    assert [s["concurrency"] for s in steps] == [1, 2, 3]  # 3 = ceil(2 x 1.5), up to max_concurrency
    for s in steps:
        assert {"concurrency", "output_tok_s", "ttft_ms_p99", "running_max", "waiting_max"} <= s.keys()
        assert s["waiting_max"] == 0 and s["output_tok_s"] > 0 and s["delivered"]
    assert sat["classification"] in ("NONE", "THROUGHPUT_PLATEAU")
    assert sat["max_executable_concurrency"] == 3 == sat["evidence"]["max_executable_concurrency"]
    # every step's TTFT p50 (about 5 ms) lies far inside 5 s and no target is set: PASS at the top step
    # (catches a verdict that ignores the steps, or names another step than the one the SLO held to)
    assert sat["verdict"] == "PASS" and sat["max_slo_concurrency"] == 3, (sat["verdict"], sat["reasons"])
    assert sat["reasons"][1] == "serves C=3 within the SLO (TTFT p50 <= 5,000 ms, the whole 95% interval)"


def test_mixed_rounds_follow_the_crossover(run: tuple[Path, dict[str, Any]]) -> None:
    mixed = by_name(run[1])["mixed"]
    rounds = mixed["evidence"]["rounds"]
    assert [(r["index"], r["order"], r["retained"]) for r in rounds] == [
        (0, "ISO->MIX", False),
        (1, "MIX->ISO", True),
        (2, "ISO->MIX", True),
    ]
    assert mixed["evidence"]["long_requests"] > 0 and mixed["samples"]["rounds_retained"] == 2


def test_kv_tier_and_context_on_a_server_that_states_no_limits(run: tuple[Path, dict[str, Any]]) -> None:
    trials = by_name(run[1])
    kv = trials["kv-tier"]
    assert kv["verdict"] == "UNAVAILABLE" and "capacity unknown" in kv["reasons"][0]
    ctx = trials["context"]
    assert ctx["verdict"] == "PASS" and ctx["evidence"]["over_limit"] is None
    assert ctx["evidence"]["long"]["input_len"] == 64 and ctx["samples"] == {
        "short_requests": 20,
        "long_requests": 20,
    }


def test_kv_tier_with_a_given_capacity_runs_and_is_unsupported(
    server: ThreadedServer, tmp_path: Path
) -> None:
    (tmp_path / "p.yaml").write_text(
        PROFILE.replace("concurrency: 2}", "concurrency: 2, capacity_tokens: 64}")
    )
    summary = run_accept(server.url, profile=tmp_path / "p.yaml", trials=["kv-tier"])
    kv = summary["trials"][0]
    assert kv["verdict"] == "UNSUPPORTED" and kv["samples"] == {"sessions": 3}  # ceil(64 x 1.5 / 32)
    assert kv["evidence"]["capacity_source"] == "profile" and kv["evidence"]["reprefill_cost"] > 0
    assert kv["evidence"]["offload_counters"] == {}
    # UNSUPPORTED is an honest word, not a success: nothing here PASSed, so the run did not pass
    assert summary["passed"] is False and summary["not_measured"][0]["name"] == "kv-tier"


def test_report_is_self_contained_with_plots_drawn(run: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    page = run[0] / "report.html"
    text = page.read_text()
    assert "Acceptance trials" in text and text.count("<svg") == 5
    assert not re.search(r"(src|href)=\"https?://", text)
    png = screenshot(page, tmp_path / "accept.png", tmp_path)
    assert drawn_pixels(png) > 40_000


def test_cli_json_and_exit_code(server: ThreadedServer, tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(PROFILE)
    args = [
        "accept",
        "--url",
        server.url,
        "--profile",
        str(tmp_path / "p.yaml"),
        "--json",
        str(tmp_path / "s.json"),
    ]
    ok = CliRunner().invoke(app, [*args, "--trials", "context"])
    assert ok.exit_code == 0, ok.output
    assert json.loads((tmp_path / "s.json").read_text())["trials"][0]["verdict"] == "PASS"
    assert "context" in ok.output and "PASS" in ok.output
    bad = CliRunner().invoke(app, [*args, "--trials", "prefix-cache"])
    assert bad.exit_code == 1
    assert json.loads((tmp_path / "s.json").read_text())["trials"][0]["functional"] == "FAIL"


def test_kv_tier_runs_the_same_sessions_on_a_baseline_server(server: ThreadedServer, tmp_path: Path) -> None:
    with ThreadedServer(SyntheticConfig(itl_s=0.002, ttft_s=0.005)) as baseline:
        profile = PROFILE.replace(
            "concurrency: 2}", f"concurrency: 2, capacity_tokens: 64, baseline_url: '{baseline.url}'}}"
        )
        (tmp_path / "p.yaml").write_text(profile)
        kv = run_accept(server.url, profile=tmp_path / "p.yaml", trials=["kv-tier"])["trials"][0]
    ev = kv["evidence"]
    assert ev["baseline"]["url"] == baseline.url and ev["baseline"]["sessions"] == ev["sessions"] == 3
    assert ev["return_ttft_vs_baseline"] > 0 and kv["verdict"] == "UNSUPPORTED"


def test_accept_joins_spans_and_checks_the_plan_where_kv_pressure_began(tmp_path: Path) -> None:
    """A server exporting spans, stating its KV capacity and filling its cache half per request: the
    saturation ladder's steps carry the engine's timing, KV pressure begins at C=2, beside the plan."""
    from tests.load.test_plancheck import make_plan

    from seatrial.server.process import free_port

    port = free_port()
    synth = SyntheticConfig(itl_s=0.002, ttft_s=0.005, otlp_endpoint=f"http://127.0.0.1:{port}/v1/traces",
                            kv_cache_tokens=1_048_576, kv_usage_per_request=0.5)  # fmt: skip
    (tmp_path / "p.yaml").write_text(PROFILE)
    args = ["accept", "--url", "", "--profile", str(tmp_path / "p.yaml"), "--trials", "saturation", "--otlp-listen",
            f"127.0.0.1:{port}", "--otlp-flush", "5", "--no-gpu-telemetry", "--json", str(tmp_path / "s.json")]  # fmt: skip
    with ThreadedServer(synth) as srv:
        args[2] = srv.url
        ok = CliRunner().invoke(app, [*args, "--plan", str(make_plan(tmp_path, 1.0))])
        summary = json.loads((tmp_path / "s.json").read_text())
        bad = CliRunner().invoke(app, [*args, "--plan", str(make_plan(tmp_path, 2.0))])
    steps = summary["trials"][0]["evidence"]["steps"]
    assert summary["trials"][0]["classification"] == "KV_PRESSURE", summary["trials"][0]["reasons"]
    assert all(s["server_timing"]["joined"] == s["requests"] for s in steps)
    check = summary["plan_check"]
    assert check["verdict"] == "PASS" and check["kv_pressure_concurrency"] == 2
    assert "KV pressure began at C=2, the plan's max concurrency is 256.00" in " ".join(ok.output.split())
    assert summary["spans"]["joined"] == sum(s["requests"] for s in steps)
    assert bad.exit_code == 1 and "plan check FAIL" in bad.output


def test_compare_reads_the_accept_folder_through_its_summary(run: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """``seatrial compare`` takes an accept folder's bench-like levels (context, saturation steps) from its
    typed summary; a summary.json that is not one is bad input, not a traceback."""
    from seatrial.errors import ConfigError
    from seatrial.experiment.sources import load_runs

    folder, summary = run
    (accepted,) = load_runs(folder)
    steps = by_name(summary)["saturation"]["evidence"]["steps"]
    assert accepted.kind == "accept" and {("random 8/4", f"C={s['concurrency']}") for s in steps} <= set(accepted.levels)
    assert all(starts[0]["values"]["ttft_ms"] for starts in accepted.levels.values())
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "run.json").write_text((folder / "run.json").read_text())
    (bad / "summary.json").write_text(json.dumps({**summary, "trials": [{"name": "basic"}]}))
    with pytest.raises(ConfigError, match=r"summary\.json.*verdict"):
        load_runs(bad)
