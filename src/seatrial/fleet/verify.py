"""Is a destination the source? The two manifests compared item by item: the set of files, apparent
bytes per file, each safetensors header (tensor count, data bytes), the index's total_size against the
tensors' bytes, and the hashes (``key``: configs, index, tokenizer, every safetensors header; ``full``:
every byte). Each difference is one sentence naming the file."""

from __future__ import annotations

from typing import Any


def index_check(manifest: dict[str, Any]) -> list[str]:
    """The index's total_size against the sum of the shards' tensor bytes, on one side."""
    index = manifest.get("index")
    if not index:
        return []
    if "error" in index:
        return [f"model.safetensors.index.json: {index['error']}"]
    headers = manifest.get("safetensors") or {}
    bad = [f"{rel}: {h['error']}" for rel, h in headers.items() if "error" in h]
    tensors = sum(h.get("tensor_bytes", 0) for h in headers.values())
    if index.get("total_size") is not None and tensors != index["total_size"]:
        bad.append(f"index total_size {index['total_size']:,} but the shards hold {tensors:,} tensor bytes")
    missing = [f for f in index.get("files", []) if f not in headers]
    bad += [f"{f}: named by the index but not there" for f in missing]
    return bad


def differences(source: dict[str, Any], dest: dict[str, Any]) -> list[str]:
    out: list[str] = []
    a, b = source["files"], dest["files"]
    out += [f"{rel}: missing" for rel in sorted(a.keys() - b.keys())]
    out += [f"{rel}: not in the source" for rel in sorted(b.keys() - a.keys())]
    for rel in sorted(a.keys() & b.keys()):
        if a[rel]["size"] != b[rel]["size"]:
            out.append(f"{rel}: {b[rel]['size']:,} bytes, the source has {a[rel]['size']:,}")
    ha, hb = source.get("safetensors") or {}, dest.get("safetensors") or {}
    for rel in sorted(ha.keys() & hb.keys()):
        for field in ("tensors", "data_bytes"):
            if ha[rel].get(field) != hb[rel].get(field):
                out.append(f"{rel}: {field} {hb[rel].get(field)} against the source's {ha[rel].get(field)}")
    out += [f"destination {x}" for x in index_check(dest) if x not in index_check(source)]
    for kind in ("key", "full"):
        ka, kb = source.get(kind) or {}, dest.get(kind) or {}
        for rel in sorted(ka.keys() & kb.keys()):
            if ka[rel] != kb[rel]:
                what = "header" if rel.endswith(".safetensors") and kind == "key" else "content"
                out.append(f"{rel}: {what} differs ({kind} hash)")
    return out
