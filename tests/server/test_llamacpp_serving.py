"""seatrial against a real llama.cpp ``llama-server`` (CPU, built by scripts/setup_llamacpp.sh) serving the
tests' tiny model as a GGUF: bench's server join and exact prompt lengths through its own ``/tokenize``,
accept's basic, saturation and prefix-cache trials judged from its ``llamacpp:`` counters, a capacity search,
and an experiment ``--parallel 1`` against ``4`` over 2 + 2 fresh starts (issue 39).

One server for the module (a start takes about a second); the experiment starts its own. Each load is sized
to what it must show on the 2-core host: 4 slots, prompts of 64 tokens, 16 output tokens."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.clirun import invoke

from seatrial.errors import EngineError
from seatrial.server.engine import SERVE_NICE, LocalEngine
from seatrial.server.llamacpp import LlamaSpec, llama_server, make_tiny_gguf

pytestmark = pytest.mark.engine

PROFILE = {
    "run": ["basic", "saturation", "prefix-cache"],
    "slo": {"ttft_ms": 5000, "percentile": 90},
    "max_lag_ms": 1000,
    "trials": {
        "basic": {"requests": 24, "input_len": 64, "output_len": 16},
        "saturation": {"ladder": [2, 8], "min_requests": 24, "warmup": 1, "input_len": 32, "output_len": 16,
                       "max_concurrency": 16},
        "prefix-cache": {"num_prefixes": 2, "prefix_len": 512, "questions_per_prefix": 6, "question_len": 16,
                         "output_len": 4, "concurrency": 2},
    },
}  # fmt: skip


def llamacpp_or_skip() -> Path:
    """The built llama-server; a skip that says why where it is not built, a failure where CI requires it
    (SEATRIAL_REQUIRE_LLAMACPP=1)."""
    try:
        return llama_server()
    except EngineError as exc:
        if os.environ.get("SEATRIAL_REQUIRE_LLAMACPP") == "1":
            pytest.fail(str(exc))
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    llamacpp_or_skip()
    return make_tiny_gguf(tmp_path_factory.mktemp("llamacpp-model"))


@pytest.fixture(scope="module")
def llama(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalEngine]:
    log = tmp_path_factory.mktemp("llamacpp-server") / "server.log"
    engine = LocalEngine(LlamaSpec(model=gguf, parallel=4, serve_nice=SERVE_NICE), log)
    try:
        engine.wait_ready()
        yield engine
    finally:
        engine.stop()


def test_bench_joins_the_server_and_sends_exact_prompts(llama: LocalEngine, tmp_path: Path) -> None:
    r = invoke(["bench", "--url", llama.url, "--workload", "random", "--input-len", "64", "--output-len", "16",
                "--concurrency", "1,4", "--requests", "16", "--warmup", "2", "--out", str(tmp_path / "run"),
                "--json", str(tmp_path / "b.json")])  # fmt: skip
    assert r.code in (0, 1), r.output
    levels = json.loads((tmp_path / "b.json").read_text())["levels"]
    for lv in levels:
        assert lv["requests_failed"] == 0 and lv["requests_ok"] == 16, lv["invalid_reasons"]
        assert lv["prompt_token_mismatches"] == 0  # its own /tokenize built prompts of exactly 64 tokens
        srv = lv["server"]
        assert srv["prompt_tokens"] >= 16 * 64 and srv["generation_tokens"] >= 16 * 16
        assert srv["kv_cache_usage_max"] is None and "UNAVAILABLE" in srv["unavailable"]["kv_cache_usage"]
    rows = [json.loads(x) for x in (tmp_path / "run" / "requests.jsonl").read_text().splitlines()]
    measured = [x for x in rows if x["phase"] == "measure"]
    assert all(x["prompt_tokens"] == 64 and x["output_tokens"] == 16 for x in measured)
    timed = [x["server_timing"] for x in measured if x.get("server_timing")]
    assert len(timed) == len(measured)  # llama-server's own per-request timings, joined to each record
    assert all(t["predicted_n"] == 16 and t["prompt_n"] + t["cache_n"] == 64 for t in timed), timed[:3]
    # a gap per chunk (llama-server holds tokens back until a UTF-8 character is whole): the usage total in
    # the last chunk is not 16 more tokens 0 ms apart (27 gaps for 16 tokens before)
    assert all(len(x["itl_ms"]) <= 15 for x in measured), [len(x["itl_ms"]) for x in measured]


def test_accept_judges_its_counters(llama: LocalEngine, tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(PROFILE))
    r = invoke(["accept", "--url", llama.url, "--profile", str(tmp_path / "p.yaml"), "--out", str(tmp_path / "run"),
                "--json", str(tmp_path / "a.json")])  # fmt: skip
    trials = {t["name"]: t for t in json.loads((tmp_path / "a.json").read_text())["trials"]}
    assert trials["basic"]["verdict"] == "PASS", r.output
    sat = trials["saturation"]
    assert sat["verdict"] != "FAIL", r.output
    pc = trials["prefix-cache"]
    assert pc["functional"] == "PASS", r.output  # its cached prompt tokens counted the shared prefixes


def test_capacity_finds_a_bound(llama: LocalEngine, tmp_path: Path) -> None:
    r = invoke(["capacity", "--url", llama.url, "--input-len", "64", "--output-len", "16", "--slo", "ttft_ms:2000",
                "--mode", "concurrency", "--start", "1", "--max-rate", "8", "--json", str(tmp_path / "c.json")])  # fmt: skip
    assert r.code in (0, 1), r.output
    cap = json.loads((tmp_path / "c.json").read_text())
    assert cap["capacity"]["found"] and cap["capacity"]["concurrency"] >= 1, r.output
    assert all(p["valid"] for p in cap["probes"]), r.output


def experiment_plan(gguf: Path) -> dict[str, Any]:
    spec = LlamaSpec(model=gguf, parallel=1)
    argv = spec.serve_command()
    del argv[argv.index("--parallel") : argv.index("--parallel") + 2]  # each setting names its own
    return {
        "serve": {"command": argv, "ready_timeout_s": 120, "nice": SERVE_NICE},
        "baseline": {"name": "parallel-1", "args": ["--parallel", "1"]},
        "treatments": [{"name": "parallel-4", "args": ["--parallel", "4"]}],
        "workload": {"model": "tiny", "workload": "random", "input_len": 64, "output_len": 16, "ignore_eos": True,
                     "concurrency": [4], "requests": 32, "warmup": 2, "max_lag_ms": 1000},
        "starts": 2,
        "decide": {"profiles": {"batch": {"concurrency": 4, "metric": "output_tok_s", "min_gain_pct": 20}}},
    }  # fmt: skip


def test_experiment_over_fresh_starts_never_rejects_four_slots(gguf: Path, tmp_path: Path) -> None:
    """Seen here: 1,946 and 2,104 output tok/s with one slot, 2,842 and 2,817 with four (+40%); over 2 + 2
    starts Welch's interval has about one degree of freedom and stays INCONCLUSIVE, so the test asks that
    both settings started twice, were measured, and that four slots are never REJECTed."""
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(experiment_plan(gguf)))
    r = invoke(["experiment", str(tmp_path / "plan.yaml"), "--out", str(tmp_path / "out"),
                "--json", str(tmp_path / "e.json")])  # fmt: skip
    summary = json.loads((tmp_path / "e.json").read_text())
    starts = [st for s in summary["settings"] for st in s["starts"]]
    assert len(starts) == 4, r.output  # 2 + 2 fresh starts of llama-server
    decision = next(d for d in summary["decisions"] if d["profile"] == "batch")
    assert decision["verdict"] in ("ADOPT", "INCONCLUSIVE"), (r.output, decision)
    per = {s["name"]: s["levels"][0]["stats"]["output_tok_s"]["per_start"] for s in summary["settings"]}
    stalled = {s["name"]: s["levels"][0]["stalled_starts"] for s in summary["settings"]}
    invalid = {s["name"]: [lv["invalid_reasons"] for st in s["starts"] for lv in st["levels"] if not lv["valid"]]
               for s in summary["settings"]}  # fmt: skip
    # a start is measured, or left out with its reason: its client stalled (this host's 2 cores are shared
    # with the engine), or its level was invalid (seen: llama-server dropped 1 of 32 streams at --parallel 4,
    # "ServerDisconnectedError", which stays a failed request); never dropped unsaid
    assert all(len(per[n]) + len(stalled[n]) + len(invalid[n]) == 2 for n in per), (per, stalled, invalid)
    assert all(reasons for n in invalid for reasons in invalid[n]), invalid
    assert per["parallel-4"] and all(v > 0 for v in per["parallel-4"]), (per, stalled)
