"""config.json surgery: quantization_config for what was converted, and explicit ``--set-config`` edits.

Every edit becomes a :class:`ConfigChange` (dotted key, value before, value after, reason) that the
converter writes to the change log in DST. Rules:
- lm_head restored to BF16: ``"lm_head"`` leaves every ``config_groups.*.targets`` list (a group left
  with no target is removed) and joins ``ignore`` so no FP8 scheme claims it again.
- FP8 tables: their ``ignore`` entries stay (the table is a gather, not a GEMM; the runtime's FP8
  embedding path loads it by the scale tensor); the change log records the new storage.
- ``--set-config KEY=VALUE``: KEY is a dotted path (integers index lists, e.g. ``layer_types.3``);
  VALUE is parsed as JSON when it parses, else kept as a string. Every parent must already exist;
  the last key may be new in an object (e.g. ``ple_embedding_dtype``), a list index may not.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from seatrial.errors import ConfigError


class ConfigChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    before: Any
    after: Any
    reason: str


def parse_set_config(items: list[str]) -> list[tuple[str, Any]]:
    """Parse ``KEY=VALUE`` strings (``--set-config``) into (dotted key, JSON value) pairs."""
    pairs: list[tuple[str, Any]] = []
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set-config: {item!r} is not KEY=VALUE")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        pairs.append((key.strip(), value))
    return pairs


def apply_set_config(config: dict[str, Any], pairs: list[tuple[str, Any]]) -> list[ConfigChange]:
    """Apply explicit edits in place; each must name an existing key or list index."""
    changes = []
    for key, value in pairs:
        parent, last = _resolve_parent(config, key)
        is_new = isinstance(parent, dict) and last not in parent
        before = None if is_new else parent[last]
        parent[last] = value
        reason = "--set-config (new key)" if is_new else "--set-config"
        changes.append(ConfigChange(key=key, before=before, after=value, reason=reason))
    return changes


def _resolve_parent(config: dict[str, Any], key: str) -> tuple[Any, Any]:
    node: Any = config
    parts = key.split(".")
    path: list[Any] = []
    for part in parts:
        step: Any = int(part) if isinstance(node, list) and part.lstrip("-").isdigit() else part
        is_last = len(path) == len(parts) - 1
        try:
            if not (is_last and isinstance(node, dict)):
                node[step]
        except (KeyError, IndexError, TypeError):
            raise ConfigError(f"--set-config: {key!r} does not exist in config.json") from None
        path.append(step)
        if len(path) < len(parts):
            node = node[step]
    return node, path[-1]


def restore_lm_head_config(config: dict[str, Any], module: str) -> list[ConfigChange]:
    """Take ``module`` (the lm_head) out of FP8 targets and put it in ``ignore``."""
    qcfg = config.get("quantization_config")
    if not isinstance(qcfg, dict):
        return []
    changes = []
    groups = qcfg.get("config_groups") or {}
    for gname in list(groups):
        targets = groups[gname].get("targets") or []
        kept = [t for t in targets if t != module]
        if kept == targets:
            continue
        key = f"quantization_config.config_groups.{gname}"
        if kept:
            groups[gname]["targets"] = kept
            changes.append(
                ConfigChange(key=f"{key}.targets", before=targets, after=kept, reason="lm_head BF16")
            )
        else:
            before = copy.deepcopy(groups.pop(gname))
            changes.append(
                ConfigChange(key=key, before=before, after=None, reason="lm_head BF16: no target left")
            )
    ignore = list(qcfg.get("ignore") or [])
    if module not in ignore:
        qcfg["ignore"] = [*ignore, module]
        changes.append(
            ConfigChange(
                key="quantization_config.ignore", before=ignore, after=qcfg["ignore"], reason="lm_head BF16"
            )
        )
    return changes


def table_note(name: str, scale_name: str, scale: float, source_dtype: str) -> ConfigChange:
    """Change-log entry for a table now stored as FP8 E4M3FN with one global BF16 scale."""
    return ConfigChange(
        key=f"tensors.{name}",
        before=source_dtype,
        after={"dtype": "F8_E4M3", "scale_tensor": scale_name, "scale": scale},
        reason="--embedding-fp8 (quantization_config ignore entries kept: a gather, not a GEMM)",
    )
