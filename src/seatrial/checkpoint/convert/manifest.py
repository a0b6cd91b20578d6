"""The conversion manifest: written to DST before any tensor is converted, updated after each output.

It holds what an interrupted run must not recompute (each table's global max and scale, the source
bytes), the planned outputs with their status and content digest (``digest_algorithm``), and where to resume after a failure.
Its content is deterministic (no clocks), so a resumed run ends with the same bytes as a clean one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from seatrial.checkpoint.convert.atomic import write_public_json
from seatrial.checkpoint.convert.fidelity import ShardFidelity
from seatrial.checkpoint.convert.stio import DIGEST_ALGORITHM
from seatrial.errors import CheckpointError
from seatrial.jsonio import read_json

MANIFEST_NAME = "seatrial-convert-manifest.json"
CHANGELOG_NAME = "seatrial-convert-changelog.json"
#: /2: output digests are XXH3-128 (``digest``); /1 recorded SHA-256 (``sha256``) and is refused on resume.
FORMAT = "seatrial-convert/2"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TensorRecord(_Model):
    name: str
    dtype: str
    shape: list[int]


class OutputRecord(_Model):
    """One file of DST. ``kind``: table (FP8 shards), scale (global scale), rewrite (a source file with
    tensors replaced or dropped), link (an untouched file, hard-linked or copied)."""

    file: str
    kind: Literal["table", "scale", "rewrite", "link"]
    source_file: str | None = None
    table: str | None = None
    tensors: list[TensorRecord] = Field(default_factory=list)
    status: Literal["pending", "done"] = "pending"
    digest: str | None = None
    size_bytes: int | None = None
    method: Literal["hardlink", "copy"] | None = None
    fidelity: list[ShardFidelity] = Field(default_factory=list)


class TableRecord(_Model):
    """A converted table; ``global_max`` and ``scale`` come from the scan pass."""

    name: str
    source_dtype: str
    shard_tensors: list[str]
    source_bytes: int
    output_bytes: int
    scale_name: str
    global_max: float
    scale: float
    shard_max_abs: list[float]


class LmHeadRecord(_Model):
    """The FP8 lm_head restored to BF16, and the exactness of that restore."""

    tensor: str
    scale_tensor: str
    scale_shape: list[int]
    source_bytes: int
    output_bytes: int
    inexact_elements: int = 0
    elements: int = 0
    max_abs_rounding_error: float = 0.0


class SourceFileRecord(_Model):
    size_bytes: int
    mtime_ns: int


class Manifest(_Model):
    format: str = FORMAT
    digest_algorithm: str = DIGEST_ALGORITHM
    src: str
    options: dict[str, object]
    source_files: dict[str, SourceFileRecord]
    total_size_before: int
    total_size_after: int
    tables: list[TableRecord]
    lm_head: LmHeadRecord | None = None
    outputs: list[OutputRecord]
    complete: bool = False
    resume_from: str | None = None
    last_error: str | None = None

    def output(self, file: str) -> OutputRecord:
        for record in self.outputs:
            if record.file == file:
                return record
        raise KeyError(file)


def save_manifest(dst: Path, manifest: Manifest) -> None:
    """Write the manifest atomically into ``dst``."""
    write_public_json(dst / MANIFEST_NAME, manifest.model_dump(mode="json"))


def load_manifest(dst: Path) -> Manifest:
    """Read ``dst``'s manifest; a clear error when it is missing or not ours."""
    path = dst / MANIFEST_NAME
    if not path.is_file():
        raise CheckpointError(dst, f"--resume: no {MANIFEST_NAME} here; not a seatrial convert destination")
    try:
        raw = read_json(path)
    except ValueError as exc:
        raise CheckpointError(path, f"unreadable manifest: {exc}") from None
    found = raw.get("format") if isinstance(raw, dict) else None
    if found != FORMAT:
        raise CheckpointError(
            path,
            f"manifest format {found!r} is not {FORMAT!r} (this seatrial's, {DIGEST_ALGORITHM} digests);"
            " it cannot be resumed here: convert again into a new DST",
        )
    try:
        manifest = Manifest.model_validate(raw)
    except ValueError as exc:
        raise CheckpointError(path, f"unreadable manifest: {exc}") from None
    if manifest.digest_algorithm != DIGEST_ALGORITHM:
        raise CheckpointError(
            path, f"digest algorithm {manifest.digest_algorithm!r}, this seatrial checks {DIGEST_ALGORITHM!r}"
        )
    return manifest
