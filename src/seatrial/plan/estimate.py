"""Weight bytes estimated from config.json alone (``seatrial plan --config FILE``).

Parameters per part follow the standard decoder layouts (GQA/MHA, MLA, gated delta net, dense
MLP, routed + shared experts). Quantized parts (attention, MLPs, experts) take the declared
format's bits including its scales: NVFP4 4.5 (FP8 scale per 16), MXFP4 4.25 (per 32), FP8 8,
INT4 4.125 and INT8 8.125 (16-bit scale per 128); embeddings, lm_head, norms and gates stay
in the model dtype.
"""

from __future__ import annotations

from typing import Any

from seatrial.checkpoint.inventory import text_config
from seatrial.checkpoint.quant import declared_quantization
from seatrial.plan.arch import Arch
from seatrial.plan.weights import WeightItem

FORMAT_BITS = {"NVFP4": 4.5, "MXFP4": 4.25, "FP8": 8.0, "INT4": 4.125, "INT8": 8.125}


def _attention_params(arch: Arch, cfg: dict[str, Any], kind: str) -> int:
    h = arch.hidden_size
    if kind == "mla":
        nope, rope = int(cfg.get("qk_nope_head_dim", 128)), int(cfg.get("qk_rope_head_dim", 64))
        v, kv, ql = int(cfg.get("v_head_dim", 128)), int(cfg["kv_lora_rank"]), cfg.get("q_lora_rank")
        q = h * ql + ql * arch.num_heads * (nope + rope) if ql else h * arch.num_heads * (nope + rope)
        return q + h * (kv + rope) + kv * arch.num_heads * (nope + v) + arch.num_heads * v * h
    if kind == "linear":
        v_dim = arch.linear_value_heads * arch.linear_value_head_dim
        k_dim = (arch.linear_conv_dim - v_dim) // 2
        return h * (2 * k_dim + 2 * v_dim) + h * 2 * arch.linear_value_heads + v_dim * h
    q = arch.num_heads * arch.head_dim
    return h * q + 2 * h * arch.num_kv_heads * arch.head_dim + q * h


def estimate_items(config: dict[str, Any], arch: Arch) -> list[WeightItem]:
    """Bytes per component and layer for a checkpoint described only by its config."""
    declared = declared_quantization(config, {}, "")
    bits = FORMAT_BITS.get(declared.label, arch.dtype_bytes * 8.0)
    cfg = text_config(config)
    h, d = arch.hidden_size, arch.dtype_bytes

    def q(params: int) -> int:
        return int(params * bits / 8)

    items = [WeightItem("embed_tokens", None, arch.vocab_size * h * d)]
    if not arch.tie_word_embeddings:
        items.append(WeightItem("lm_head", None, arch.vocab_size * h * d))
    items.append(WeightItem("norms_gates", None, h * d))
    for i, kind in enumerate(arch.layer_kinds):
        items.append(WeightItem("attention", i, q(_attention_params(arch, cfg, kind))))
        gates = 2 * h
        if arch.num_experts and i >= arch.first_dense_layers:
            items.append(
                WeightItem("routed_experts", i, q(arch.num_experts * 3 * h * arch.moe_intermediate_size))
            )
            if arch.shared_intermediate_size:
                items.append(WeightItem("shared_experts", i, q(3 * h * arch.shared_intermediate_size)))
            gates += arch.num_experts * h
        else:
            items.append(WeightItem("mlp", i, q(3 * h * arch.intermediate_size)))
        items.append(WeightItem("norms_gates", i, gates * d))
    return items
