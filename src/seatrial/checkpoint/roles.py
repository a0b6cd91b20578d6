"""Tensor roles: which component of the model a tensor belongs to, by its name.

Components: routed_experts, shared_experts, attention (incl. linear attention and Mamba
mixers), mlp (dense), embed_tokens, ple (per-layer / n-gram embeddings), lm_head, vision,
mtp (multi-token prediction heads), norms_gates (norms, routers, gates), other.
"""

from __future__ import annotations

import re

COMPONENTS = (
    "routed_experts",
    "shared_experts",
    "attention",
    "mlp",
    "embed_tokens",
    "ple",
    "lm_head",
    "vision",
    "mtp",
    "norms_gates",
    "other",
)

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (component, re.compile(pattern))
    for component, pattern in (
        ("mtp", r"(^|\.)(mtp|nextn|eh_proj|enorm|hnorm|fc_embedding|fc_hidden)(\.|_|$)"),
        (
            "vision",
            r"(^|\.)(visual|vision_tower|vision_model|vision_encoder|image_encoder|"
            r"multi_modal_projector|mm_projector|vision)(\.|$)",
        ),
        ("ple", r"(^|\.|_)(ple|per_layer|ngram_embed\w*|engram\w*)(\.|_|$)"),
        ("lm_head", r"(^|\.)(lm_head|embed_out)(\.|$)|^output\.weight$"),
        ("embed_tokens", r"(^|\.)(embed_tokens|wte|word_embeddings|tok_embeddings)(\.|$)"),
        (
            "norms_gates",
            r"(^|\.)(\w*norm\w*|gate|router|shared_expert_gate|e_score_correction_bias)"
            r"\.[^.]+$|e_score_correction_bias$",
        ),
        ("shared_experts", r"(^|\.)shared_experts?(\.|$)"),
        ("routed_experts", r"(^|\.)experts(\.|$)"),
        (
            "attention",
            r"(^|\.)(self_attn|attn|attention|linear_attn|mixer|mamba|"
            r"[qkvo]_proj|qkv_proj|in_proj\w*|out_proj|conv1d|A_log|dt_bias|D)(\.|$)",
        ),
        ("mlp", r"(^|\.)(mlp|feed_forward|ffn|gate_proj|up_proj|down_proj|gate_up_proj)(\.|$)"),
    )
)
_DIGITS = str.maketrans("0123456789", "##########")
_cache: dict[str, str] = {}


def classify(name: str, num_layers: int | None = None) -> str:
    """The component of tensor ``name``; layers at or past ``num_layers`` are MTP layers."""
    template = name.translate(_DIGITS)
    hit = _cache.get(template)
    if hit is None:
        hit = next((c for c, rule in _RULES if rule.search(template)), "other")
        _cache[template] = hit
    if num_layers is not None and hit not in ("vision", "mtp"):
        layer = layer_index(name)
        if layer is not None and layer >= num_layers:
            return "mtp"
    return hit


def layer_index(name: str) -> int | None:
    """The decoder layer number in ``...layers.N...`` (or ``...h.N...``), else None."""
    at = name.find(".layers.")
    start = at + 8 if at >= 0 else (name.find(".h.") + 3 if ".h." in name else -1)
    if start < 0:
        return None
    end = name.find(".", start)
    digits = name[start:end] if end >= 0 else name[start:]
    return int(digits) if digits.isdigit() else None
