"""Weight bytes per rank: which PP stage holds each part and how TP / EP divide it.

Decoder layers go to the stage that owns their index (vLLM's ``get_pp_indices`` or an explicit
``VLLM_PP_LAYER_PARTITION``); embeddings, PLE and vision to the first stage; lm_head and the final
norm to the last. Norms and router gates are replicated on every TP rank; routed experts are
divided by TP x DP under expert parallelism, else by TP; everything else by TP. PLE can live in
host RAM instead (vLLM's PLE CPU offload). MTP heads are loaded only for speculative decoding.
"""

from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from seatrial.checkpoint.inventory import Inventory
from seatrial.checkpoint.quant import precision
from seatrial.errors import ConfigError

FIRST_STAGE = frozenset({"embed_tokens", "ple", "vision"})
LAST_STAGE = frozenset({"lm_head"})


class WeightItem(NamedTuple):
    """Bytes of one component in one decoder layer (``layer`` None for model-level parts), stored in
    ``precision`` (``NVFP4``, ``FP8``, ``BF16``...; empty when estimated) holding ``params`` parameters."""

    component: str
    layer: int | None
    nbytes: int
    precision: str = ""
    params: int = 0


class StageWeights(NamedTuple):
    """Per-rank GPU weight bytes of a stage, the host bytes its node holds, and the parameters of the
    stage (all ranks) by storage precision."""

    layers: range
    gpu_bytes_per_rank: int
    host_bytes_per_node: int
    by_component: dict[str, int]
    params_by_precision: dict[str, int]


def items_from_inventory(inv: Inventory) -> list[WeightItem]:
    acc: dict[tuple[str, int | None, str], list[int]] = defaultdict(lambda: [0, 0])
    for g in inv.groups:
        layer = g.layer if g.component not in ("vision", "mtp") else None
        totals = acc[(g.component, layer, precision(g.format))]
        totals[0] += g.nbytes
        totals[1] += g.params
    return [WeightItem(c, layer, b, prec, n) for (c, layer, prec), (b, n) in acc.items()]


def pp_partition(num_layers: int, pp: int, explicit: list[int] | None = None) -> list[int]:
    """Layers per stage, as vLLM's get_pp_indices computes them."""
    if explicit:
        if len(explicit) != pp or sum(explicit) != num_layers:
            raise ConfigError(
                f"--pp-layer-partition {','.join(map(str, explicit))}: "
                f"needs {pp} parts summing to {num_layers}"
            )
        return list(explicit)
    parts = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        parts[-i] += 1
    return parts


def stage_ranges(parts: list[int]) -> list[range]:
    starts = [sum(parts[:i]) for i in range(len(parts))]
    return [range(s, s + n) for s, n in zip(starts, parts, strict=True)]


def _stage(item: WeightItem, ranges: list[range]) -> int:
    if item.layer is not None:
        return next((i for i, r in enumerate(ranges) if item.layer in r), len(ranges) - 1)
    if item.component in LAST_STAGE or item.component == "norms_gates":
        return len(ranges) - 1
    return 0


def _divisor(component: str, tp: int, dp: int, ep: int) -> int:
    if component == "norms_gates":
        return 1
    if component == "routed_experts" and ep > 1:
        return tp * dp
    return tp


def stage_weights(
    items: list[WeightItem], ranges: list[range], tp: int, dp: int, ep: int, embeddings_on_host: bool
) -> list[StageWeights]:
    """Weights per stage; ``tp`` may differ per stage only through the caller passing one stage."""
    gpu: list[defaultdict[str, int]] = [defaultdict(int) for _ in ranges]
    params: list[defaultdict[str, int]] = [defaultdict(int) for _ in ranges]
    host = [0] * len(ranges)
    for item in items:
        if item.component == "mtp":
            continue
        stage = _stage(item, ranges)
        params[stage][item.precision] += item.params
        if item.component == "ple" and embeddings_on_host:
            host[stage] += item.nbytes
            continue
        gpu[stage][item.component] += item.nbytes // _divisor(item.component, tp, dp, ep)
    return [
        StageWeights(r, sum(g.values()), h, dict(g), dict(p))
        for r, g, h, p in zip(ranges, gpu, host, params, strict=True)
    ]
