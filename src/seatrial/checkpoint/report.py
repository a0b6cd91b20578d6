"""The audit's result models (JSON field names are a contract).

Plain dataclasses: the audit builds them from values it has already checked, and ``seatrial audit``
should not pay for a validation library's start-up (about a tenth of a second) on the way to a
sub-second answer. ``model_dump`` gives the JSON form, as the pydantic models elsewhere do.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from seatrial.runs.findings import Finding


@dataclass
class _Model:
    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        """The fields as plain dicts and lists (the same in ``python`` and ``json`` mode)."""
        return asdict(self)


@dataclass
class ShardSummary(_Model):
    """A shard: ``bytes`` is the sum of its tensors' data bytes."""

    file: str
    bytes: int
    tensors: int


@dataclass
class Component(_Model):
    """A model component: bytes by safetensors dtype (``dtypes``) and by storage format (``formats``)."""

    name: str
    bytes: int
    params: int
    dtypes: dict[str, int]
    formats: dict[str, int]
    tensors: int


@dataclass
class DeclaredQuant(_Model):
    """Where the label comes from (``config.json``, ``hf_quant_config.json``, ``name``, ``none``)."""

    source: str
    method: str
    label: str
    formats: list[str]
    ignore: list[str]


@dataclass
class AuditReport(_Model):
    """``total_bytes``: tensor data bytes from offsets; ``total_params``: logical parameters;
    ``stored_elements``: elements as stored (packed bytes count once)."""

    checkpoint: str
    total_bytes: int
    total_params: int
    stored_elements: int
    by_dtype: dict[str, int]
    by_format: dict[str, int]
    files: list[ShardSummary]
    largest_shard: ShardSummary
    components: list[Component]
    declared: DeclaredQuant
    index_total_size: int | None
    findings: list[Finding]

    def component(self, name: str) -> Component | None:
        return next((c for c in self.components if c.name == name), None)
