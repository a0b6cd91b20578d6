"""KV-cache capacity by vLLM's own rules (vllm/v1/kv_cache_interface.py, v1/core/kv_cache_utils.py).

Per layer a *page* holds ``block_size`` tokens: full, sliding and chunked attention store K and V
(``2 x kv_heads x head_dim x dtype`` per token, kv heads ``max(1, heads // tp)``, so replicated
when TP exceeds them); MLA stores one latent (``kv_lora_rank + qk_rope_head_dim``) replicated on
every rank; linear attention stores a fixed state (conv + temporal) per request. In a hybrid with
state layers the attention block grows until its page covers the state page, which is padded to
match. Layers are grouped (one group per attention type when uniform, else groups of equal size),
``num_blocks = kv_bytes // max(sum of pages in a group)``, taken as the minimum over PP stages,
and ``max_concurrency = num_blocks / sum over groups of blocks one max_model_len request needs``;
``kv_cache_tokens = int(max_concurrency * max_model_len)`` — what vLLM's
"KV cache size: N tokens, Maximum concurrency for L tokens per request: Xx" line prints.
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from seatrial.plan.arch import Arch


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class LayerSpec(NamedTuple):
    kind: str
    block_size: int
    page_bytes: int
    window: int | None


class KvSettings(NamedTuple):
    """The engine settings that shape the cache: ``in_flight_batches`` is vLLM's max_concurrent_batches."""

    tp: int
    block_size: int
    kv_dtype_bytes: int
    max_model_len: int
    max_num_batched_tokens: int
    in_flight_batches: int
    prefix_caching: bool
    kernel_block_alignment: int = 16
    ssm_dtype_bytes: int = 2


class KvCapacity(BaseModel):
    model_config = ConfigDict(extra="forbid")

    block_size: int
    num_blocks: int
    bytes_per_block: int
    blocks_per_request: int
    kv_cache_tokens: int
    max_concurrency: float
    groups: list[list[int]]
    bytes_per_token: float
    stage_blocks: list[int]


def _token_bytes(arch: Arch, kind: str, s: KvSettings) -> int:
    if kind == "mla":
        return (arch.mla_head_size or 0) * s.kv_dtype_bytes
    return 2 * max(1, arch.num_kv_heads // s.tp) * arch.head_dim * s.kv_dtype_bytes


def state_bytes(arch: Arch, s: KvSettings) -> int:
    """Linear-attention (gated delta net) state per request and rank: the conv state in the model
    dtype, the temporal (SSM) state in ``ssm_dtype_bytes`` (vLLM's mamba_ssm_cache_dtype)."""
    conv = arch.linear_conv_dim // s.tp * (arch.linear_conv_kernel - 1)
    temporal = arch.linear_value_heads // s.tp * arch.linear_value_head_dim * arch.linear_key_head_dim
    return conv * arch.dtype_bytes + temporal * s.ssm_dtype_bytes


def layer_specs(arch: Arch, s: KvSettings) -> list[LayerSpec]:
    """One spec per decoder layer after vLLM's hybrid block-size alignment."""
    attn_kinds = [k for k in arch.layer_kinds if k not in ("linear", "none")]
    block = s.block_size
    state = state_bytes(arch, s) if "linear" in arch.layer_kinds else 0
    if state and attn_kinds:
        per_token = _token_bytes(arch, attn_kinds[0], s)
        align = max(s.kernel_block_alignment, block)
        needed = align * cdiv(state, align * per_token)
        block = max(block, s.kernel_block_alignment * cdiv(needed, s.kernel_block_alignment))
        state = block * per_token
    specs = []
    for kind in arch.layer_kinds:
        if kind == "linear":
            specs.append(LayerSpec(kind, block, state, None))
        elif kind != "none":
            window = (
                arch.sliding_window
                if kind == "sliding"
                else arch.attention_chunk_size
                if kind == "chunked"
                else None
            )
            specs.append(LayerSpec(kind, block, block * _token_bytes(arch, kind, s), window))
        else:
            specs.append(LayerSpec(kind, block, 0, None))
    return specs


def _groups(specs: list[LayerSpec]) -> list[list[int]]:
    layers = [i for i, sp in enumerate(specs) if sp.kind != "none"]
    if len({specs[i] for i in layers}) <= 1:
        return [layers] if layers else []
    buckets: dict[LayerSpec, list[int]] = {}
    for i in layers:
        buckets.setdefault(specs[i], []).append(i)
    sizes = [len(b) for b in buckets.values()]
    size = max(sizes) if max(sizes) < min(sizes) * 1.5 else min(sizes)
    groups = []
    for members in buckets.values():
        count = cdiv(len(members), size)
        groups += [members[i::count] for i in range(count)]
    return groups


def _unify_pages(specs: list[LayerSpec]) -> list[LayerSpec]:
    """Grow the block of attention layers whose page divides the largest page (else pad it)."""
    top = max(sp.page_bytes for sp in specs)
    out = []
    for sp in specs:
        if sp.page_bytes and sp.page_bytes != top and sp.kind != "linear" and top % sp.page_bytes == 0:
            sp = sp._replace(block_size=sp.block_size * (top // sp.page_bytes), page_bytes=top)
        elif sp.page_bytes and sp.page_bytes != top:
            sp = sp._replace(page_bytes=top)
        out.append(sp)
    return out


def _request_blocks(sp: LayerSpec, s: KvSettings) -> int:
    in_flight = s.in_flight_batches * s.max_num_batched_tokens
    if sp.kind == "linear":
        return 2 if s.prefix_caching else 1
    if sp.kind == "sliding" and sp.window:
        return cdiv(min(sp.window - 1 + in_flight, s.max_model_len), sp.block_size) + 1
    if sp.kind == "chunked" and sp.window:
        return cdiv(min(sp.window + in_flight, s.max_model_len), sp.block_size)
    return cdiv(s.max_model_len, sp.block_size)


def capacity(arch: Arch, s: KvSettings, stages: list[tuple[range, int]]) -> KvCapacity:
    """KV capacity for PP stages given as (layer range, KV bytes per rank of that stage)."""
    specs = layer_specs(arch, s)
    uniform = len({sp for sp in specs if sp.kind != "none"}) <= 1
    if not uniform:
        specs = _unify_pages(specs)
    groups = _groups(specs)
    if not groups:
        return KvCapacity(
            block_size=s.block_size,
            num_blocks=0,
            bytes_per_block=0,
            blocks_per_request=0,
            kv_cache_tokens=0,
            max_concurrency=0.0,
            groups=[],
            bytes_per_token=0.0,
            stage_blocks=[0] * len(stages),
        )
    per_stage = []
    for layer_range, kv_bytes in stages:
        per_block = max(sum(specs[i].page_bytes for i in g if i in layer_range) for g in groups)
        per_stage.append((kv_bytes // per_block if per_block else None, per_block))
    num_blocks = min((n for n, _ in per_stage if n is not None), default=0)
    bytes_per_block = max(b for _, b in per_stage)
    need = sum(_request_blocks(specs[g[0]], s) for g in groups)
    concurrency = max(num_blocks, 0) / need
    block = min(specs[g[0]].block_size for g in groups)
    return KvCapacity(
        block_size=block,
        num_blocks=max(num_blocks, 0),
        bytes_per_block=bytes_per_block,
        blocks_per_request=need,
        kv_cache_tokens=int(concurrency * s.max_model_len),
        max_concurrency=concurrency,
        groups=groups,
        bytes_per_token=sum(specs[g[0]].page_bytes for g in groups) / block,
        stage_blocks=[max(n or 0, 0) for n, _ in per_stage],
    )
