"""A YAML file a user wrote (an experiment plan, a trials profile), read as one mapping: anything else,
no UTF-8, no YAML, or nesting no plan needs, is a ConfigError naming the file (exit 2), never a crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from seatrial.errors import ConfigError

MAX_DEPTH = 64  # a plan or profile nests a few levels; more is a hostile or broken file


def load_mapping(where: str, path: Path | None = None, text: str | None = None) -> dict[str, Any]:
    """The mapping in ``path`` (or ``text``); ``where`` names it in every message. Empty: ``{}``."""
    try:
        source = path.read_text(encoding="utf-8") if path is not None else text or ""
        raw = yaml.safe_load(source)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot be read as UTF-8 text ({exc})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{where}: nested deeper than this reader can follow") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping at the top level")
    if _depth(raw) > MAX_DEPTH:
        raise ConfigError(f"{where}: nested deeper than {MAX_DEPTH} levels")
    return raw


def _depth(node: Any) -> int:
    """How deep ``node`` nests, counted no further than past MAX_DEPTH: a YAML alias may make a cycle
    (``a: &x [*x]``) or share one node many times (``billion laughs``); each node is walked once per depth."""
    deepest, stack, seen = 0, [(node, 1)], set()
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            return depth
        if (id(item), depth) in seen:
            continue
        seen.add((id(item), depth))
        if isinstance(item, dict):
            stack += [(v, depth + 1) for v in item.values()]
        elif isinstance(item, list):
            stack += [(v, depth + 1) for v in item]
    return deepest
