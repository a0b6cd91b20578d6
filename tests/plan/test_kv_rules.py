"""KV capacity follows vLLM's rules, checked against numbers derived by hand from its formulas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from tests.ckptgen.seed000 import config as seed000_config

from seatrial.plan import PlanRequest, plan, planner
from seatrial.plan.arch import arch_from_config
from seatrial.plan.kv import KvSettings, capacity, layer_specs, state_bytes

GIB = 1024**3
LLAMA: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "vocab_size": 512,
    "torch_dtype": "bfloat16",
}


def _settings(**kw: Any) -> KvSettings:
    base = {
        "tp": 1,
        "block_size": 16,
        "kv_dtype_bytes": 2,
        "max_model_len": 2048,
        "max_num_batched_tokens": 2048,
        "in_flight_batches": 1,
        "prefix_caching": True,
    }
    return KvSettings(**{**base, **kw})


def _cap(config: dict[str, Any], kv_bytes: int = GIB, **kw: Any):  # type: ignore[no-untyped-def]
    arch = arch_from_config(config)
    return capacity(arch, _settings(**kw), [(range(arch.num_layers), kv_bytes)])


def test_full_attention_gqa() -> None:
    kv = _cap(LLAMA)
    # page = 16 tokens x 2 (K,V) x 2 heads x 64 x 2 bytes; 4 layers per block
    assert kv.bytes_per_block == 4 * 16 * 2 * 2 * 64 * 2
    assert kv.num_blocks == GIB // kv.bytes_per_block == 32768
    assert kv.blocks_per_request == 2048 // 16
    assert (kv.kv_cache_tokens, kv.max_concurrency) == (524_288, 256.0)


def test_block_rounding_and_partial_blocks() -> None:
    kv = _cap(LLAMA, kv_bytes=GIB + 32767, max_model_len=2000)
    assert kv.num_blocks == 32768  # a partial block is not allocated
    assert kv.blocks_per_request == 125  # cdiv(2000, 16)
    assert kv.kv_cache_tokens == int(32768 / 125 * 2000)


def test_kv_heads_replicated_when_tp_exceeds_them() -> None:
    tp2, tp4 = _cap(LLAMA, tp=2), _cap(LLAMA, tp=4)
    assert tp2.bytes_per_block == tp4.bytes_per_block == 4 * 16 * 2 * 1 * 64 * 2
    mha = _cap({**LLAMA, "num_key_value_heads": 8}, tp=4)
    assert mha.bytes_per_block == 4 * 16 * 2 * 2 * 64 * 2


def test_mla_latent_is_replicated_on_every_rank() -> None:
    cfg = {**LLAMA, "model_type": "deepseek_v2", "kv_lora_rank": 128, "qk_rope_head_dim": 64}
    one, two = _cap(cfg), _cap(cfg, tp=2)
    assert one.bytes_per_block == two.bytes_per_block == 4 * 16 * (128 + 64) * 2  # one latent, no V


def test_sliding_window_hybrid_groups_and_window_blocks() -> None:
    cfg = {
        **LLAMA,
        "model_type": "gemma3_text",
        "num_hidden_layers": 6,
        "sliding_window": 256,
        "layer_types": ["sliding_attention"] * 5 + ["full_attention"],
    }
    kv = _cap(cfg, block_size=128)
    assert len(kv.groups) == 6 and kv.bytes_per_block == 128 * 2 * 2 * 64 * 2
    sliding = -(-min(256 - 1 + 2048, 2048) // 128) + 1  # vLLM: cdiv(min(w - 1 + in-flight, len), bs) + 1
    assert kv.blocks_per_request == 2048 // 128 + 5 * sliding


def test_all_sliding_is_one_uniform_group() -> None:
    kv = _cap({**LLAMA, "model_type": "mistral", "sliding_window": 512}, max_model_len=4096)
    assert len(kv.groups) == 1 and kv.blocks_per_request == -(-(512 - 1 + 2048) // 16) + 1


def test_gated_delta_net_aligns_the_attention_block() -> None:
    arch = arch_from_config(seed000_config())
    s = _settings(tp=2, max_model_len=16384)
    specs = layer_specs(arch, s)
    # state per rank: conv 8192/2 x 3 + temporal 32/2 x 128 x 128, in BF16 = 548,864 bytes
    # attention page per token and rank: 2 x 1 head x 256 x 2 = 1,024
    # -> block = 16 x cdiv(548864, 16 x 1024) = 544
    assert {sp.block_size for sp in specs} == {544}
    assert {sp.page_bytes for sp in specs} == {544 * 1024}
    kv = capacity(arch, s, [(range(48), 22 * GIB)])
    assert [len(g) for g in kv.groups] == [12, 12, 12, 12]
    assert kv.blocks_per_request == -(-16384 // 544) + 3 * 2  # state layers hold 2 blocks with prefix caching


@pytest.mark.parametrize("pp_split", [[24, 24], [3, 45]])
def test_pp_takes_the_smallest_stage(pp_split: list[int]) -> None:
    arch = arch_from_config({**LLAMA, "num_hidden_layers": 48})
    a, b = pp_split
    kv = capacity(arch, _settings(), [(range(0, a), GIB), (range(a, 48), GIB)])
    page = 16 * 2 * 2 * 64 * 2
    assert kv.stage_blocks == [GIB // (a * page), GIB // (b * page)]
    assert kv.num_blocks == min(kv.stage_blocks)


def test_ssm_state_dtype_on_cpu_follows_vllm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cfg = {
        **LLAMA,
        "model_type": "qwen3_next",
        "full_attention_interval": 4,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "linear_key_head_dim": 64,
        "linear_value_head_dim": 64,
        "linear_conv_kernel_dim": 4,
    }
    path = tmp_path / "config.json"
    path.write_bytes(orjson.dumps(cfg))
    conv, temporal = (2 * 64 * 2 + 4 * 64) * 3, 4 * 64 * 64
    for avx, ssm_bytes in ((True, 4), (False, 2)):
        monkeypatch.setattr(planner, "cpu_has_flag", lambda flag, avx=avx: avx)
        result = plan(PlanRequest(config=path, hardware="cpu", kv_cache_gib=1, max_model_len=2048))
        arch = arch_from_config(cfg)
        assert state_bytes(arch, _settings(ssm_dtype_bytes=ssm_bytes)) == conv * 2 + temporal * ssm_bytes
        per_token = 2 * 2 * 64 * 2
        block = 128 * -(-(conv * 2 + temporal * ssm_bytes) // (128 * per_token))
        assert result.block_size == block


def test_cpu_mla_block_size_depends_on_amx(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(
        orjson.dumps({**LLAMA, "model_type": "deepseek_v2", "kv_lora_rank": 128, "qk_rope_head_dim": 64})
    )
    for amx, block in ((True, 128), (False, 16)):
        monkeypatch.setattr(planner, "cpu_has_flag", lambda flag, amx=amx: amx)
        result = plan(PlanRequest(config=path, hardware="cpu", kv_cache_gib=1, max_model_len=2048))
        assert result.block_size == block
        assert result.kv.num_blocks == GIB // (4 * block * 192 * 2)


def test_a_kv_size_given_over_the_budget_does_not_fit(tmp_path: Path) -> None:
    """``--kv-cache-gib`` bypasses the ledger as vLLM's kv_cache_memory_bytes does, but vLLM still allocates it:
    a size the budget cannot hold was planned as fitting (a trial then started a candidate that cannot)."""
    from tests.ckptgen.tiny import write_tiny_checkpoint

    from seatrial.plan import check_launch

    ckpt = write_tiny_checkpoint(tmp_path / "ckpt")
    for hardware in ("h100", "cpu"):
        over = check_launch(ckpt, hardware=hardware, kv_cache_gib=100_000, host_reserve_gib=1)
        assert not over.fits and [f.code for f in over.findings if f.severity == "error"] == ["kv_exceeds_budget"]
        assert check_launch(ckpt, hardware=hardware, kv_cache_gib=1, host_reserve_gib=1).fits
