"""``seatrial audit``: what a checkpoint really holds, from its headers alone."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

from seatrial.checkpoint.findings import all_findings
from seatrial.checkpoint.inventory import Inventory, TensorGroup, scan
from seatrial.checkpoint.report import AuditReport, Component, DeclaredQuant, ShardSummary
from seatrial.checkpoint.roles import COMPONENTS


def audit(root: Path | str) -> AuditReport:
    """Audit the checkpoint directory ``root`` (reads headers, index and configs only)."""
    return summarize(scan(Path(root)))


def summarize(inv: Inventory) -> AuditReport:
    """Turn an inventory into the audit report, findings included."""
    files = _shards(inv)
    by_dtype: dict[str, int] = defaultdict(int)
    by_format: dict[str, int] = defaultdict(int)
    for g in inv.groups:
        by_dtype[g.dtype] += g.nbytes
        by_format[g.format] += g.nbytes
    d = inv.declared
    report = AuditReport(
        checkpoint=str(inv.files.root),
        total_bytes=sum(f.bytes for f in files),
        total_params=sum(g.params for g in inv.groups),
        stored_elements=sum(g.elements for g in inv.groups),
        by_dtype=dict(sorted(by_dtype.items(), key=lambda kv: -kv[1])),
        by_format=dict(sorted(by_format.items(), key=lambda kv: -kv[1])),
        files=files,
        largest_shard=max(files, key=lambda f: f.bytes),
        components=components(inv.groups),
        declared=DeclaredQuant(
            source=d.source, method=d.method, label=d.label, formats=list(d.formats), ignore=list(d.ignore)
        ),
        index_total_size=inv.files.index_total_size,
        findings=[],
    )
    report.findings.extend(all_findings(inv, report))
    return report


def _shards(inv: Inventory) -> list[ShardSummary]:
    return [ShardSummary(file=d.file, bytes=d.tensor_bytes, tensors=d.tensors) for d in inv.shards]


@dataclass
class _Totals:
    bytes: int = 0
    params: int = 0
    tensors: int = 0
    dtypes: dict[str, int] = field(default_factory=dict)
    formats: dict[str, int] = field(default_factory=dict)


def components(groups: list[TensorGroup]) -> list[Component]:
    """Per-component totals, in the fixed order of ``COMPONENTS``, empty ones left out."""
    acc: dict[str, _Totals] = defaultdict(_Totals)
    for g in groups:
        c = acc[g.component]
        c.bytes += g.nbytes
        c.params += g.params
        c.tensors += g.tensors
        c.dtypes[g.dtype] = c.dtypes.get(g.dtype, 0) + g.nbytes
        c.formats[g.format] = c.formats.get(g.format, 0) + g.nbytes
    return [Component(name=name, **asdict(acc[name])) for name in COMPONENTS if name in acc]
