"""One pass over a checkpoint's headers: tensors grouped by role, format and layer.

Each shard is digested (see ``digest``) into groups of tensors sharing a name template, a
dtype and a layer; here each group gets its role, storage format and logical parameters.
Bytes and counts are exact sums over the group.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from seatrial.checkpoint.digest import ShardDigest
from seatrial.checkpoint.dtypes import DTYPE_BITS
from seatrial.checkpoint.header import TensorEntry
from seatrial.checkpoint.index import CheckpointFiles, list_files
from seatrial.checkpoint.quant import (
    AUX_LEAVES,
    Declared,
    declared_quantization,
    params_per_element,
    split_name,
    tensor_format,
)
from seatrial.checkpoint.roles import classify
from seatrial.checkpoint.shardpool import ShardPool

_MAIN_LEAVES = ("weight_packed", "qweight", "weight")


class TensorGroup(NamedTuple):
    """Tensors of one ``file`` sharing ``template``, ``dtype`` and ``layer``.

    ``example`` and ``shape`` are the first such tensor's; ``elements`` are stored elements;
    ``params`` are logical parameters (0 for scales and other auxiliary tensors).
    """

    file: str
    template: str
    example: str
    shape: tuple[int, ...]
    dtype: str
    layer: int | None
    tensors: int
    nbytes: int
    elements: int
    params: int
    component: str
    format: str
    auxiliary: bool


class Inventory(NamedTuple):
    """Everything the audit and the planner need, read from headers and JSON files only."""

    files: CheckpointFiles
    shards: list[ShardDigest]
    groups: list[TensorGroup]
    declared: Declared
    num_layers: int | None


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's config: ``text_config`` of a multimodal config merged over the config."""
    inner = config.get("text_config") or config.get("llm_config")
    return {**config, **inner} if isinstance(inner, dict) else config


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Parsed headers create hundreds of thousands of acyclic objects; the cyclic collector would
    rescan them on every allocation burst, doubling the wall time, and can find nothing to free."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def scan(root: Path) -> Inventory:
    """Read every shard header of the checkpoint at ``root`` and classify its tensors."""
    with _no_cyclic_gc():
        return _scan(root)


def _scan(root: Path) -> Inventory:
    with ShardPool.open(root) as pool:
        files = list_files(root, pool.index())
        shards = pool.digests(files.shards)
    layers = text_config(files.config).get("num_hidden_layers")
    num_layers = layers if isinstance(layers, int) else None
    declared = declared_quantization(files.config, files.hf_quant_config, root.resolve().name)
    raw = [(d.file, *g) for d in shards for g in d.groups]
    siblings: dict[str, dict[str, TensorEntry]] = {}
    for _file, template, example, shape, dtype, *_ in raw:
        module, leaf = split_name(template)[0], split_name(example)[1]
        siblings.setdefault(module, {}).setdefault(leaf, TensorEntry(dtype, shape, 0, 0))
    groups = [_finish(r, siblings, declared.int_bits, num_layers) for r in raw]
    return Inventory(files, shards, groups, declared, num_layers)


def _finish(
    raw: tuple[Any, ...], siblings: dict[str, dict[str, TensorEntry]], int_bits: int, num_layers: int | None
) -> TensorGroup:
    file, template, example, shape, dtype, layer, count, nbytes = raw
    module, leaf = split_name(template)[0], split_name(example)[1]
    near = siblings[module]
    parent = siblings.get(split_name(module)[0], {})
    if "weight_scale" not in near and "weight_scale" in parent:  # one scale shared by split tensors
        near = {**near, "weight_scale": parent["weight_scale"]}
    auxiliary = leaf in AUX_LEAVES
    main_leaf = next((m for m in _MAIN_LEAVES if m in near), leaf) if auxiliary else leaf
    own = TensorEntry(dtype, shape, 0, 0)
    main = own if main_leaf == leaf else near.get(main_leaf, own)
    fmt = tensor_format(main_leaf, main, near, int_bits)
    elements = nbytes * 8 // DTYPE_BITS[dtype]
    params = elements * params_per_element(leaf, dtype, fmt, int_bits)
    component = classify(example, num_layers)
    return TensorGroup(
        file,
        template,
        example,
        shape,
        dtype,
        layer,
        count,
        nbytes,
        elements,
        params,
        component,
        fmt,
        auxiliary,
    )
