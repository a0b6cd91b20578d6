"""Audit findings: seed 000's five pre-selection checks and the structural checks.

The five checks: (1) PLE dtype and bytes in the weight index; (2) the PLE dtype the config
declares; (3) quantization ignore/exclude lists covering PLE or n-gram embeddings;
(4) separate precision of lm_head, MTP and vision tower; (5) scale tensors the runtime
must support (an lm_head row scale, a PLE scale).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from seatrial.checkpoint.header import read_header
from seatrial.checkpoint.index import read_weight_map
from seatrial.checkpoint.inventory import Inventory, text_config
from seatrial.checkpoint.quant import precision
from seatrial.checkpoint.report import AuditReport, Component
from seatrial.runs.findings import Finding

GIB = 1024**3
_WIDE = ("BF16", "F16", "F32", "F64")
_MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers", "mtp_num_layers")


def gib(nbytes: int) -> str:
    return f"{nbytes / GIB:.2f} GiB"


def dominant(component: Component) -> str:
    """The storage format holding most of a component's bytes."""
    return max(component.formats.items(), key=lambda kv: kv[1])[0]


def all_findings(inv: Inventory, report: AuditReport) -> list[Finding]:
    checks = (_label, _ple, _separate_precision, _scales, _mtp, _index, _shards, _unreferenced)
    return [f for check in checks for f in check(inv, report)]


def _label(inv: Inventory, r: AuditReport) -> Iterator[Finding]:
    declared = {precision(f) for f in r.declared.formats} or {r.declared.label}
    if r.declared.source == "none" or r.total_bytes == 0:
        return
    for c in r.components:
        fmt = precision(dominant(c))
        share = c.bytes / r.total_bytes
        if fmt not in declared and share >= 0.10:
            yield Finding(
                code="label_mismatch",
                severity="warning",
                message=f"labelled {r.declared.label}; {share:.0%} of bytes are {fmt} {_display(c.name)} "
                f"({c.bytes:,} bytes = {gib(c.bytes)})",
            )


def _display(component: str) -> str:
    return "PLE" if component == "ple" else component


def _ple(inv: Inventory, r: AuditReport) -> Iterator[Finding]:
    ple = r.component("ple")
    cfg = text_config(inv.files.config)
    declared_dtype = next(
        (str(v) for k, v in cfg.items() if "ple" in k.lower() and "dtype" in k.lower()), None
    )
    if ple is None:
        return
    fmt = dominant(ple)
    wide = precision(fmt) in _WIDE
    yield Finding(
        code="ple_stored",
        severity="warning" if wide and ple.bytes >= 0.10 * r.total_bytes else "info",
        message=f"PLE in the weight index: {ple.tensors} tensors, {ple.bytes:,} bytes ({gib(ple.bytes)}, "
        f"{ple.bytes / r.total_bytes:.1%} of the checkpoint), {ple.params:,} parameters stored as {fmt}",
    )
    if declared_dtype is None:
        yield Finding(
            code="ple_config_dtype",
            severity="warning" if wide else "info",
            message=f"config.json declares no PLE dtype; the stored PLE is {fmt}",
        )
    elif _dtype_word(declared_dtype) != precision(fmt):
        yield Finding(
            code="ple_config_dtype",
            severity="error",
            message=f"config.json declares PLE dtype {declared_dtype} but the stored PLE is {fmt}",
        )
    hits = [p for p in r.declared.ignore if "ple" in p.lower() or "ngram_embed" in p.lower()]
    if hits:
        yield Finding(
            code="ple_quant_excluded",
            severity="warning" if wide else "info",
            message=f"quantization ignore/exclude list covers PLE ({len(hits)} of {len(r.declared.ignore)} "
            f"entries, e.g. {hits[0]!r}): PLE stays {fmt} under a {r.declared.label} label",
        )


def _dtype_word(text: str) -> str:
    t = text.lower().replace("torch.", "")
    return {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}.get(
        t, "FP8" if "float8" in t else t.upper()
    )


def _separate_precision(inv: Inventory, r: AuditReport) -> Iterator[Finding]:
    parts = []
    for name in ("lm_head", "mtp", "vision"):
        c = r.component(name)
        parts.append(f"{name} {dominant(c)} ({gib(c.bytes)})" if c else f"{name} not stored")
    body = r.component("routed_experts") or r.component("mlp")
    head = f"body {dominant(body)}; " if body else ""
    yield Finding(code="separate_precision", severity="info", message=head + "; ".join(parts))


def _scales(inv: Inventory, r: AuditReport) -> Iterator[Finding]:
    head = [g for g in inv.groups if g.component == "lm_head"]
    weight = next((g for g in head if not g.auxiliary), None)
    scales = [g for g in head if g.auxiliary]
    if weight is not None and weight.format == "FP8/channel" and scales:
        bf16 = weight.params * 2
        delta = bf16 - weight.nbytes - sum(s.nbytes for s in scales)
        yield Finding(
            code="lm_head_row_scale",
            severity="warning",
            message=f"lm_head is FP8 {list(weight.shape)} with a row-wise {scales[0].dtype} scale "
            f"{list(scales[0].shape)}: the runtime's lm_head must create 'lm_head.weight_scale' or loading "
            f"fails; restoring BF16 adds +{delta:,} bytes",
        )
    ple_scales = [g for g in inv.groups if g.component == "ple" and g.auxiliary]
    if ple_scales:
        yield Finding(
            code="ple_scale_runtime",
            severity="warning",
            message=f"PLE carries {sum(g.tensors for g in ple_scales)} scale tensor(s) "
            f"(e.g. {ple_scales[0].example}, "
            f"{ple_scales[0].dtype} {list(ple_scales[0].shape)}): "
            "the runtime must support scaled PLE embeddings",
        )


def _mtp(inv: Inventory, r: AuditReport) -> Iterator[Finding]:
    cfg = text_config(inv.files.config)
    declared = next(((k, cfg[k]) for k in _MTP_KEYS if isinstance(cfg.get(k), int) and cfg[k] > 0), None)
    if declared and r.component("mtp") is None:
        yield Finding(
            code="mtp_not_stored",
            severity="warning",
            message=f"config.json declares {declared[0]}={declared[1]} but no MTP tensors are stored; "
            "speculative decoding with MTP will fail to load",
        )


def _index(inv: Inventory, r: AuditReport) -> Iterator[Finding]:
    if r.index_total_size is not None and r.index_total_size != r.total_bytes:
        yield Finding(
            code="index_total_size",
            severity="warning",
            message=f"index total_size {r.index_total_size:,} differs from the headers' sum "
            f"{r.total_bytes:,} by {r.total_bytes - r.index_total_size:+,} bytes",
        )
    expected = inv.files.index_prints
    if not expected or all(expected.get(d.file) == (d.tensors, d.name_hash) for d in inv.shards):
        return
    wm = read_weight_map(inv.files.root)
    stored: dict[str, str] = {}
    for d in inv.shards:
        stored.update(dict.fromkeys(read_header(d.path).names, d.file))
    missing = [n for n, f in wm.items() if stored.get(n) != f]
    extra = [n for n in stored if n not in wm]
    if missing:
        yield Finding(
            code="index_missing_tensors",
            severity="error",
            message=f"{len(missing)} tensors named by the index are not in the file it names, "
            f"e.g. {missing[0]}",
        )
    if extra:
        yield Finding(
            code="index_unlisted_tensors",
            severity="warning",
            message=f"{len(extra)} stored tensors are not in the index (stale?), e.g. {extra[0]}",
        )


OVERSIZED_MIN_BYTES = 1 << 30  # a whole-file load peak under 1 GiB threatens no host


def _shards(inv: Inventory, r: AuditReport) -> Iterator[Finding]:
    """A shard is far larger than the rest when it is over 4x the median of the others, holds over
    a fifth of the checkpoint and at least 1 GiB: the loader opens a file whole, so it sets the load peak."""
    if len(r.files) < 3:
        return
    for shard in r.files:
        others = statistics.median(f.bytes for f in r.files if f is not shard)
        big = shard.bytes >= OVERSIZED_MIN_BYTES and shard.bytes > 0.2 * r.total_bytes
        if big and shard.bytes > 4 * others:
            yield Finding(
                code="oversized_shard",
                severity="warning",
                message=f"{shard.file} holds {gib(shard.bytes)} in {shard.tensors} tensors, "
                f"{shard.bytes / max(others, 1):.0f}x the median shard ({gib(int(others))}); "
                "the loader opens it whole",
            )


def _unreferenced(inv: Inventory, r: AuditReport) -> Iterator[Finding]:
    for d in inv.shards:
        if d.data_bytes > d.tensor_bytes:
            yield Finding(
                code="unreferenced_bytes",
                severity="warning",
                message=f"{d.file}: {d.data_bytes - d.tensor_bytes:,} data bytes belong to no tensor",
            )
