"""The KV chunk size ``kv.disk`` and ``kv.object`` move: one KV block of every attention layer of the model
(``seatrial plan``'s page bytes per layer at vLLM's block size, one rank) times the blocks per chunk."""

from __future__ import annotations

import json
from pathlib import Path

from seatrial.errors import ConfigError
from seatrial.plan.arch import arch_from_config
from seatrial.plan.kv import KvSettings, layer_specs

BLOCK_SIZE = 16  # vLLM's default tokens per block


def chunk_from_config(
    config: Path, blocks_per_chunk: int = 1, block_size: int = BLOCK_SIZE
) -> tuple[int, str]:
    """(bytes, where they come from) for a model's ``config.json``; ConfigError when it cannot be read."""
    try:
        arch = arch_from_config(json.loads(config.read_text()))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--kv-config {config}: {exc}") from None
    s = KvSettings(tp=1, block_size=block_size, kv_dtype_bytes=arch.dtype_bytes, max_model_len=block_size,
                   max_num_batched_tokens=block_size, in_flight_batches=1, prefix_caching=False)  # fmt: skip
    per_block = sum(sp.page_bytes for sp in layer_specs(arch, s) if sp.kind not in ("linear", "none"))
    if per_block <= 0:
        raise ConfigError(f"--kv-config {config}: the model has no attention KV to chunk")
    source = (f"seatrial plan: {arch.model_type}, {per_block:,} B per {block_size}-token block of all attention layers"
              f" x {blocks_per_chunk} block(s)")  # fmt: skip
    return per_block * blocks_per_chunk, source
