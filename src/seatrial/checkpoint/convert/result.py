"""The machine-readable result of ``seatrial convert`` (what ``--json`` writes)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from seatrial.checkpoint.convert.config_edit import ConfigChange
from seatrial.checkpoint.convert.fidelity import TableFidelity, table_fidelity
from seatrial.checkpoint.convert.manifest import LmHeadRecord, Manifest


class TableReport(BaseModel):
    """One converted table: storage before/after, the scale, and the fidelity table."""

    model_config = ConfigDict(extra="forbid")

    name: str
    source_dtype: str
    shard_tensors: int
    output_files: list[str]
    scale_name: str
    global_max: float
    scale: float
    source_bytes: int
    output_bytes: int
    fidelity: TableFidelity


class ConvertResult(BaseModel):
    """Summary of a conversion. ``files`` counts outputs by how they were produced this run."""

    model_config = ConfigDict(extra="forbid")

    src: str
    dst: str
    resumed: bool
    total_size_before: int
    total_size_after: int
    tables: list[TableReport]
    lm_head: LmHeadRecord | None
    config_changes: list[ConfigChange]
    files: dict[str, int] = Field(default_factory=dict)
    removed_temporaries: list[str] = Field(default_factory=list)
    elapsed_ms: float
    peak_rss_bytes: int
    kernel: str = Field(description="the per-element loops that ran: 'c' (compiled) or 'numpy'")


def table_reports(manifest: Manifest, row_stride: int) -> list[TableReport]:
    """Fidelity and storage of each table, gathered from its outputs in the manifest."""
    reports = []
    for table in manifest.tables:
        outputs = [o for o in manifest.outputs if o.table == table.name and o.kind == "table"]
        shards = [f for o in outputs for f in o.fidelity]
        reports.append(
            TableReport(
                name=table.name,
                source_dtype=table.source_dtype,
                shard_tensors=len(table.shard_tensors),
                output_files=[o.file for o in outputs],
                scale_name=table.scale_name,
                global_max=table.global_max,
                scale=table.scale,
                source_bytes=table.source_bytes,
                output_bytes=table.output_bytes,
                fidelity=table_fidelity(shards, row_stride),
            )
        )
    return reports
