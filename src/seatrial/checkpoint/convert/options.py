"""Typed options of ``seatrial convert`` (shared by the CLI and library callers)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from seatrial.checkpoint.convert.source import DEFAULT_EMBEDDING_PATTERN


class ConvertOptions(BaseModel):
    """What to convert and how.

    ``embedding_pattern`` is a regex searched in tensor names (None: convert no table).
    ``scale_name`` may contain ``{table}`` (the table's name prefix). ``shards`` is the number of output
    files per table (default one per source shard tensor); ``max_file_bytes`` bounds each table output
    file. ``fidelity_row_stride`` measures every n-th row for the fidelity report (1 = every row).
    ``chunk_bytes`` is the most source bytes processed at once (memory stays a small multiple of it).
    """

    model_config = ConfigDict(extra="forbid")

    src: Path
    dst: Path
    embedding_pattern: str | None = DEFAULT_EMBEDDING_PATTERN
    shards: int | None = Field(default=None, ge=1)
    max_file_bytes: int | None = Field(default=None, ge=1)
    scale_name: str = "{table}.weight_scale"
    lm_head_bf16: bool = False
    set_config: list[str] = Field(default_factory=list)
    resume: bool = False
    fidelity_row_stride: int = Field(default=16, ge=1)
    chunk_bytes: int = Field(default=16 * 1024 * 1024, ge=1)

    @field_validator("scale_name")
    @classmethod
    def _named(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the scale tensor needs a name, e.g. {table}.weight_scale")
        return v

    def fingerprint(self) -> dict[str, object]:
        """The options a resumed run must share with the run that wrote the manifest."""
        return self.model_dump(mode="json", exclude={"src", "dst", "resume", "chunk_bytes"})
