"""Is a destination the source? The two manifests compared item by item: the set of files (and of
symlinks, by their targets: a symlink is never followed), apparent bytes per file, each safetensors
header (tensor count, data bytes), the index's total_size against the tensors' bytes, and the hashes
(``key``: configs, index, tokenizer, every safetensors header; ``full``: every byte). Each difference is
one sentence naming the file; :func:`compared` says in words what ``identical`` rests on."""

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


def printable(obj: Any) -> Any:
    """``obj`` with every string made printable and encodable: a name that is not UTF-8 (a lone surrogate
    from the file system) shows its bytes escaped (``caf\\xe9.json``). For what a node reports, which
    goes to the table and the JSON."""
    if isinstance(obj, str):
        return obj.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if isinstance(obj, dict):
        return {printable(k): printable(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [printable(v) for v in obj]
    return obj


def compared(source: dict[str, Any], verify: str) -> dict[str, Any]:
    """What a verdict of ``verify`` rests on, in words, and the files compared by their size alone (no
    hash covers them in ``key``: ``.bin``, ``.pt``, ``.gguf`` and any other non-key file)."""
    if verify == "full":
        return {"compared": "file set, sizes, safetensors headers and SHA-256 of every byte", "size_only": []}
    hashed = set(source.get("key") or {})
    size_only = sorted(rel for rel in source["files"] if rel not in hashed)
    words = "file set, sizes, safetensors headers, SHA-256 of config, index and tokenizer files; tensor data not hashed"
    if size_only:
        words += f"; {len(size_only)} other file{'' if len(size_only) == 1 else 's'} by size only"
    return {"compared": words, "size_only": size_only}


def _kinds(m: dict[str, Any]) -> dict[str, str]:
    return {**{rel: "file" for rel in m["files"]}, **{rel: "link" for rel in m.get("links") or {}},
            **{rel: "special file" for rel in m.get("other") or []}}  # fmt: skip


def resend(source: dict[str, Any], dest: dict[str, Any]) -> list[str]:
    """The source's files that a transfer has to send again: missing or not a regular file at the
    destination, another size, or a hash that differs (rsync's size and time check would skip those)."""
    a, b = source["files"], dest["files"]
    out = set(a) - set(b)
    out |= {rel for rel in a.keys() & b.keys() if a[rel]["size"] != b[rel]["size"]}
    for kind in ("key", "full"):
        ka, kb = source.get(kind) or {}, dest.get(kind) or {}
        out |= {rel for rel in ka.keys() & kb.keys() if ka[rel] != kb[rel] and rel in a}
    return sorted(out)


def differences(source: dict[str, Any], dest: dict[str, Any]) -> list[str]:
    out: list[str] = []
    ka, kb = _kinds(source), _kinds(dest)
    out += [f"{rel}: missing" for rel in sorted(ka.keys() - kb.keys())]
    out += [f"{rel}: not in the source" for rel in sorted(kb.keys() - ka.keys())]
    la, lb = source.get("links") or {}, dest.get("links") or {}
    for rel in sorted(ka.keys() & kb.keys()):
        if ka[rel] != kb[rel] and kb[rel] == "link":
            out.append(
                f"{rel}: a symlink in the destination (-> {lb[rel]}), a file in the source: not followed"
            )
        elif ka[rel] != kb[rel]:
            out.append(f"{rel}: a {kb[rel]} in the destination, a {ka[rel]} in the source")
        elif kb[rel] == "link" and la[rel] != lb[rel]:
            out.append(f"{rel}: a symlink to {lb[rel]}, the source's points to {la[rel]}")
    a, b = source["files"], dest["files"]
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
