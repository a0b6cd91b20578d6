"""Part 6 for real: the guard asks seatrial plan (local hardware) before launching a vLLM server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tests.ckptgen.seed000 import write_seed000

from seatrial.guard.launch import parse_vllm_command
from seatrial.guard.preflight import plan_predictor


def test_seed000_checkpoint_is_refused_with_the_ledger_and_the_shard(tmp_path: Path) -> None:
    model = tmp_path / "Qwen3.8-Flash-Next-NVFP4"
    write_seed000(model)  # sparse: 165 GiB of headers and holes
    history = tmp_path / "h.jsonl"
    cmd = [
        sys.executable,
        "-m",
        "seatrial.cli.app",
        "guard",
        "--min-available-gib",
        "1",
        "--history",
        str(history),
        "--",
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--gpu-memory-utilization",
        "0.7",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 7, proc.stderr
    out = proc.stdout + proc.stderr
    assert "refusing to launch" in out and "model-00002-of-00017.safetensors" in out and "GPU budget" in out
    events = [json.loads(line) for line in history.read_text().splitlines()]
    assert [e["event"] for e in events] == ["refuse"]


def test_a_checkpoint_that_fits_passes_the_check(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["LlamaForCausalLM"],
                "model_type": "llama",
                "hidden_size": 256,
                "intermediate_size": 512,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "head_dim": 64,
                "vocab_size": 2048,
                "max_position_embeddings": 4096,
                "torch_dtype": "bfloat16",
            }
        )
    )
    shapes = {"model.embed_tokens.weight": (2048, 256), "lm_head.weight": (2048, 256)}
    for i in range(2):
        shapes |= {
            f"model.layers.{i}.self_attn.q_proj.weight": (256, 256),
            f"model.layers.{i}.mlp.down_proj.weight": (256, 512),
        }
    save_file({k: np.zeros(v, dtype=np.float16) for k, v in shapes.items()}, str(model / "model.safetensors"))
    spec = parse_vllm_command(["vllm", "serve", str(model), "--max-model-len", "4096"])
    assert spec is not None
    check = plan_predictor(spec, protection_line_bytes=1 << 30)
    assert check.fits and check.changes == [] and "KV cache" in check.ledger
