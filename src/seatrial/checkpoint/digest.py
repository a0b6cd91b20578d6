"""One shard's header reduced to what the audit and the planner keep: sizes and tensor groups.

A *group* gathers the tensors of one file that share a name template (digits replaced by
``#``), a dtype and a layer number, so that a 300,000-tensor checkpoint becomes a few thousand
rows. Digests are small and picklable, so shards can be digested in worker processes.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from seatrial.checkpoint import native
from seatrial.checkpoint.header import ShardHeader, read_header

_DIGITS = bytes.maketrans(b"0123456789", b"##########")

RawGroup = tuple[str, str, tuple[int, ...], str, int | None, int, int]
"""(template, example name, example shape, dtype, layer, tensors, bytes)."""


class ShardDigest(NamedTuple):
    """``name_hash`` is :func:`names_hash` of the shard's tensor names (same process tree only)."""

    file: str
    path: Path
    header_bytes: int
    data_bytes: int
    tensor_bytes: int
    tensors: int
    name_hash: int
    groups: list[RawGroup]


def digest_shard(file: str, path: Path) -> ShardDigest:
    """Read and validate one shard's header and group its tensors."""
    h = read_header(path)
    groups, name_hash = raw_groups(h)
    return ShardDigest(
        file, path, h.header_bytes, h.data_bytes, int(h.nbytes.sum()), len(h.names), name_hash, groups
    )


def names_hash(names: list[str]) -> int:
    """An order-free fingerprint of a set of names: the wrapping int64 sum of their ``hash``.

    Python salts ``hash`` per process; forked workers share their parent's salt, so
    fingerprints compare only within one process tree.
    """
    return int(np.fromiter(map(hash, names), dtype=np.int64, count=len(names)).sum())


def templates_and_layers(names: list[str]) -> tuple[list[str], list[str]]:
    """Name templates (digits -> '#') and layer numbers ('' for none), computed over all names at once.

    Within one template the layer number sits at a fixed position (``.layers.##.``), so it is a slice.
    """
    templates = "\n".join(names).encode().translate(_DIGITS).decode().split("\n")
    if len(templates) != len(names):  # a name holds a newline
        templates = [n.encode().translate(_DIGITS).decode() for n in names]
    spans = {t: _layer_span(t) for t in set(templates)}
    return templates, [n[spans[t]] for n, t in zip(names, templates, strict=True)]


def _layer_span(template: str) -> slice:
    at = template.find(".layers.#")
    if at < 0:
        return slice(0, 0)
    start = at + len(".layers.")
    end = start
    while end < len(template) and template[end] == "#":
        end += 1
    return slice(start, end) if end == len(template) or template[end] == "." else slice(0, 0)


def raw_groups(h: ShardHeader) -> tuple[list[RawGroup], int]:
    """The shard's tensors grouped by (template, dtype, layer), with counts and byte sums; and the
    :func:`names_hash` of its names."""
    if not h.names:
        return [], 0
    if native.COLUMNS is not None:
        ids = np.empty(len(h.names), dtype=np.int64)
        first, name_hash = native.COLUMNS.groups(h.names, h.dtypes, ids)
    else:
        ids, first = _group_ids(h.names, h.dtypes)
        name_hash = names_hash(h.names)
    nbytes = np.bincount(ids, weights=h.nbytes, minlength=len(first))
    counts = np.bincount(ids, minlength=len(first))
    templates, layers = templates_and_layers([h.names[i] for i in first])
    out: list[RawGroup] = []
    for gid, i in enumerate(first):
        layer = layers[gid]
        out.append(
            (
                templates[gid],
                h.names[i],
                tuple(h.shapes[i]),
                h.dtypes[i],
                int(layer) if layer.isdigit() else None,
                int(counts[gid]),
                int(nbytes[gid]),
            )
        )
    return out, name_hash


def _group_ids(names: list[str], dtypes: list[str]) -> tuple[np.ndarray, list[int]]:
    """Each tensor's group number (by first appearance) and each group's first tensor, in Python
    (the compiled loop in ``_columns.c`` gives the same)."""
    templates, layers = templates_and_layers(names)
    triples = list(zip(templates, dtypes, layers, strict=True))
    keys = {k: i for i, k in enumerate(dict.fromkeys(triples))}
    ids = np.fromiter(map(keys.__getitem__, triples), dtype=np.int64, count=len(triples))
    _, first = np.unique(ids, return_index=True)
    return ids, first.tolist()
