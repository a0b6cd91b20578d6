"""What is being planned: a checkpoint's measured weights, or a config's estimated ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from seatrial.checkpoint.index import read_json_file
from seatrial.checkpoint.inventory import Inventory, scan
from seatrial.errors import CheckpointError, ConfigError
from seatrial.plan.arch import Arch, arch_from_config
from seatrial.plan.estimate import estimate_items
from seatrial.plan.weights import WeightItem, items_from_inventory


class Source(NamedTuple):
    """``largest_shard`` is (file, bytes) of the biggest file a loader opens; None without files."""

    label: str
    config: dict[str, Any]
    arch: Arch
    items: list[WeightItem]
    largest_shard: tuple[str, int] | None


def load_source(checkpoint: Path | None, config: Path | None, dtype: str) -> Source:
    if (checkpoint is None) == (config is None):
        raise ConfigError("plan needs exactly one of DIR or --config FILE")
    if config is not None:
        doc = read_json_file(config)
        if not isinstance(doc, dict):
            raise CheckpointError(config, "must hold a JSON object")
        arch = arch_from_config(doc, dtype)
        return Source(str(config), doc, arch, estimate_items(doc, arch), None)
    assert checkpoint is not None
    return source_from_inventory(scan(checkpoint), dtype)


def source_from_inventory(inv: Inventory, dtype: str = "auto") -> Source:
    """A Source from a checkpoint already scanned (an audit's inventory)."""
    if not inv.files.config:
        raise CheckpointError(inv.files.root, "has no config.json to read the architecture from")
    arch = arch_from_config(inv.files.config, dtype)
    sizes = [(d.file, d.tensor_bytes) for d in inv.shards]
    largest = max(sizes, key=lambda s: s[1])
    return Source(str(inv.files.root), inv.files.config, arch, items_from_inventory(inv), largest)
