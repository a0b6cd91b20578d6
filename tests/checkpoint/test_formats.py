"""Logical parameters and formats for the layouts real tools write; declared labels; index checks."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from tests.ckptgen.layouts import (
    bf16,
    fp8_block_deepseek,
    fp8_channel,
    fp8_tensor,
    int4_compressed_tensors,
    nvfp4_compressed_tensors,
    nvfp4_modelopt,
)
from tests.ckptgen.writer import Spec, write_safetensors, write_sharded

from seatrial.checkpoint import audit
from seatrial.checkpoint.roles import classify

P = "model.layers.0.mlp.experts.0.up_proj"


@pytest.mark.parametrize(
    ("layout", "fmt"),
    [
        (nvfp4_compressed_tensors, "NVFP4"),
        (nvfp4_modelopt, "NVFP4"),
        (fp8_channel, "FP8/channel"),
        (fp8_tensor, "FP8/tensor"),
        (fp8_block_deepseek, "FP8/block"),
        (int4_compressed_tensors, "INT4"),
    ],
)
def test_logical_params_exclude_scales(tmp_path: Path, layout, fmt: str) -> None:  # type: ignore[no-untyped-def]
    specs: list[Spec] = layout(P, 256, 512)
    write_sharded(tmp_path, {"model.safetensors": specs}, {"num_hidden_layers": 1})
    r = audit(tmp_path)
    (c,) = r.components
    assert (c.name, c.params, c.formats) == ("routed_experts", 256 * 512, {fmt: sum(s.nbytes for s in specs)})
    assert r.total_bytes == sum(s.nbytes for s in specs)


def test_plain_bf16_without_index(tmp_path: Path) -> None:
    write_safetensors(
        tmp_path / "model.safetensors",
        bf16("model.embed_tokens.weight", 10, 4) + bf16("lm_head.weight", 10, 4),
    )
    (tmp_path / "config.json").write_bytes(orjson.dumps({"torch_dtype": "bfloat16", "num_hidden_layers": 2}))
    r = audit(tmp_path)
    assert r.total_params == 80 and r.by_dtype == {"BF16": 160} and r.declared.label == "BF16"
    assert r.index_total_size is None and [c.name for c in r.components] == ["embed_tokens", "lm_head"]


def test_declared_labels(tmp_path: Path) -> None:
    cases = {
        "modelopt": ({}, {"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}}, "NVFP4"),
        "deepseek": (
            {"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}},
            None,
            "FP8",
        ),
        "gptq": ({"quantization_config": {"quant_method": "gptq", "bits": 4}}, None, "INT4"),
    }
    for name, (config, hf_quant, label) in cases.items():
        root = tmp_path / name
        write_sharded(root, {"model.safetensors": bf16("model.norm.weight", 8)}, config)
        if hf_quant:
            (root / "hf_quant_config.json").write_bytes(orjson.dumps(hf_quant))
        assert audit(root).declared.label == label, name


def test_index_and_data_checks(tmp_path: Path) -> None:
    specs = bf16("model.layers.0.self_attn.q_proj.weight", 4, 4) + bf16(
        "model.layers.1.mlp.down_proj.weight", 4, 4
    )
    write_sharded(
        tmp_path, {"model.safetensors": specs}, {"num_hidden_layers": 1, "num_nextn_predict_layers": 1}
    )
    index = orjson.loads((tmp_path / "model.safetensors.index.json").read_bytes())
    index["metadata"]["total_size"] = 1000
    index["weight_map"]["model.layers.0.ghost.weight"] = "model.safetensors"
    del index["weight_map"]["model.layers.0.self_attn.q_proj.weight"]
    (tmp_path / "model.safetensors.index.json").write_bytes(orjson.dumps(index))
    with open(tmp_path / "model.safetensors", "r+b") as fh:
        fh.truncate(fh.seek(0, 2) + 10)
    r = audit(tmp_path)
    codes = {f.code: f.message for f in r.findings}
    assert "1000 differs from the headers' sum 64" in codes["index_total_size"].replace(",", "")
    assert "model.layers.0.ghost.weight" in codes["index_missing_tensors"]
    assert "q_proj" in codes["index_unlisted_tensors"]
    assert codes["unreferenced_bytes"].startswith("model.safetensors: 10 data bytes")
    assert "mtp_not_stored" not in codes  # layer 1 >= num_hidden_layers is the stored MTP layer
    assert r.component("mtp") is not None
    assert any(f.severity == "error" for f in r.findings)


@pytest.mark.parametrize(
    ("name", "component"),
    [
        ("model.layers.3.mlp.experts.17.down_proj.weight_packed", "routed_experts"),
        ("model.layers.3.mlp.shared_expert.up_proj.weight", "shared_experts"),
        ("model.layers.3.mlp.shared_expert_gate.weight", "norms_gates"),
        ("model.layers.3.mlp.gate.weight", "norms_gates"),
        ("model.layers.3.self_attn.kv_a_proj_with_mqa.weight", "attention"),
        ("model.layers.3.linear_attn.in_proj_qkvz.weight", "attention"),
        ("model.layers.3.mixer.A_log", "attention"),
        ("model.layers.3.mlp.gate_proj.weight", "mlp"),
        ("model.layers.3.input_layernorm.weight", "norms_gates"),
        ("model.embed_tokens.weight", "embed_tokens"),
        ("model.language_model.embed_tokens_per_layer.weight", "ple"),
        ("model.ple.ngram_embedding.shard_5.weight", "ple"),
        ("lm_head.weight", "lm_head"),
        ("model.visual.blocks.0.attn.qkv.weight", "vision"),
        ("vision_tower.vision_model.encoder.layers.30.mlp.fc1.weight", "vision"),
        ("mtp.layers.0.eh_proj.weight", "mtp"),
        ("model.rotary_emb.inv_freq", "other"),
    ],
)
def test_roles(name: str, component: str) -> None:
    assert classify(name, num_layers=8) == component


def test_a_small_checkpoint_gets_no_oversized_shard_warning(tmp_path) -> None:
    """Three files where one is 100x the others, but all tiny: no load-peak threat, no warning."""
    import json

    import numpy as np
    from safetensors.numpy import save_file

    from seatrial.checkpoint import audit

    (tmp_path / "config.json").write_text(
        json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})
    )
    save_file(
        {"model.embed_tokens.weight": np.zeros((1000, 100), np.float16)},
        str(tmp_path / "model-00001-of-00003.safetensors"),
    )
    save_file(
        {"model.norm.weight": np.zeros(10, np.float16)}, str(tmp_path / "model-00002-of-00003.safetensors")
    )
    save_file(
        {"lm_head.weight": np.zeros((10, 10), np.float16)}, str(tmp_path / "model-00003-of-00003.safetensors")
    )
    assert "oversized_shard" not in {f.code for f in audit(tmp_path).findings}
