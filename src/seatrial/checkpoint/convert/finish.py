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
from seatrial.checkpoint.index import read_json_file
from seatrial.checkpoint.paths import resolve_inside
from seatrial.errors import CheckpointError, ConfigError


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
    changes = [table_note(t.name, t.scale_name, t.scale, t.source_dtype) for t in manifest.tables]
    config, edits = edited_config(source, opts, manifest.lm_head.tensor if manifest.lm_head else None)
    if config is not None:
        write_public_json(opts.dst / CONFIG_NAME, config)
    return changes + edits


def edited_config(
    source: SourceCheckpoint, opts: ConvertOptions, lm_head_tensor: str | None
) -> tuple[dict[str, Any] | None, list[ConfigChange]]:
    """SRC's config.json with the lm_head restore and ``--set-config`` applied, and those changes (None
    where SRC has no config.json). Called before DST is made, so that a bad edit or a config.json that is
    no JSON object stops the run with nothing written (ConfigError, CheckpointError), and again to write."""
    path = source.root / CONFIG_NAME
    if path.exists() or path.is_symlink():
        path = resolve_inside(source.root, CONFIG_NAME)
    if not path.is_file():
        if opts.set_config:
            raise ConfigError(f"--set-config: {path} does not exist")
        return None, []
    config = read_json_file(path)
    if not isinstance(config, dict):
        raise CheckpointError(path, "must hold a JSON object")
    changes = []
    if lm_head_tensor is not None:
        changes += restore_lm_head_config(config, lm_head_tensor.removesuffix(".weight"))
    changes += apply_set_config(config, parse_set_config(opts.set_config))
    return config, changes


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
