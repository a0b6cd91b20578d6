"""The last writes: config.json with its surgery, the change log, and the new index (written last)."""

from __future__ import annotations

import math
from typing import Any

from seatrial.checkpoint.convert.atomic import write_public_json
from seatrial.checkpoint.convert.config_edit import (
    ConfigChange,
    apply_set_config,
    parse_set_config,
    restore_lm_head_config,
    table_note,
)
from seatrial.checkpoint.convert.layout import CONFIG_NAME
from seatrial.checkpoint.convert.manifest import CHANGELOG_NAME, Manifest
from seatrial.checkpoint.convert.options import ConvertOptions
from seatrial.checkpoint.convert.source import INDEX_NAME, SourceCheckpoint
from seatrial.checkpoint.paths import resolve_inside
from seatrial.errors import ConfigError
from seatrial.jsonio import read_json


def write_metadata(source: SourceCheckpoint, opts: ConvertOptions, manifest: Manifest) -> list[ConfigChange]:
    """Write config.json and the change log, then the index; return the config changes."""
    changes = _write_config(source, opts, manifest)
    removed = sorted(
        set(source.tensors)
        - {t.name for o in manifest.outputs for t in o.tensors}
        - _linked_tensors(source, manifest)
    )
    write_public_json(
        opts.dst / CHANGELOG_NAME,
        {
            "src": manifest.src,
            "changes": [c.model_dump(mode="json") for c in changes],
            "tensors_removed_from_index": removed,
            "total_size_before": manifest.total_size_before,
            "total_size_after": manifest.total_size_after,
        },
    )
    write_public_json(opts.dst / INDEX_NAME, _index(source, manifest))
    return changes


def _write_config(source: SourceCheckpoint, opts: ConvertOptions, manifest: Manifest) -> list[ConfigChange]:
    path = source.root / CONFIG_NAME
    if path.exists() or path.is_symlink():
        path = resolve_inside(source.root, CONFIG_NAME)
    if not path.is_file():
        if opts.set_config:
            raise ConfigError(f"--set-config: {path} does not exist")
        return [table_note(t.name, t.scale_name, t.scale, t.source_dtype) for t in manifest.tables]
    config: dict[str, Any] = read_json(path)
    changes = [table_note(t.name, t.scale_name, t.scale, t.source_dtype) for t in manifest.tables]
    if manifest.lm_head is not None:
        changes += restore_lm_head_config(config, manifest.lm_head.tensor.removesuffix(".weight"))
    changes += apply_set_config(config, parse_set_config(opts.set_config))
    write_public_json(opts.dst / CONFIG_NAME, config)
    return changes


def _linked_tensors(source: SourceCheckpoint, manifest: Manifest) -> set[str]:
    return {
        n
        for o in manifest.outputs
        if o.kind == "link" and o.file in source.files
        for n in source.files[o.file]
    }


def _index(source: SourceCheckpoint, manifest: Manifest) -> dict[str, Any]:
    """``weight_map`` over every output (sorted); ``total_size`` (and ``total_parameters``) updated."""
    weight_map: dict[str, str] = {}
    elements = 0
    for record in manifest.outputs:
        if record.kind == "link" and record.file in source.files:
            for name, entry in source.files[record.file].items():
                weight_map[name] = record.file
                elements += math.prod(entry.shape)
        for tensor in record.tensors:
            weight_map[tensor.name] = record.file
            elements += math.prod(tensor.shape)
    metadata = dict(source.index_metadata)
    metadata["total_size"] = manifest.total_size_after
    if "total_parameters" in metadata:
        metadata["total_parameters"] = elements
    return {"metadata": metadata, "weight_map": dict(sorted(weight_map.items()))}
