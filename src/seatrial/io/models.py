"""``seatrial io``'s typed settings: which trials, how often, where, and what is expected of them.

``--expect KEY=VALUE`` keys are the trial's figure names (``net.gbps``, ``storage.read.gbps``,
``kv.disk.read_p95_ms``...); the defaults stated here are the ones the verdicts use without them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from seatrial.errors import ConfigError
from seatrial.io.registry import IO_TRIAL_NAMES

DEFAULT_KV_CHUNK_BYTES = (
    1 << 20
)  # a 16-token block of a ~7-8B model in BF16 is 0.5-2 MiB (seed 004's KV tier)


class Expect(BaseModel):
    """Floors and ceilings the verdicts judge against (None: no stated floor, see each trial)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    net_gbps: float | None = Field(None, gt=0, alias="net.gbps")
    net_min_share: float = Field(0.80, gt=0, le=1, alias="net.min_share")  # IBM Autopilot: >= 80% of peak
    net_nccl_busbw_gbps: float | None = Field(None, gt=0, alias="net.nccl.busbw_gbps")
    storage_read_gbps: float | None = Field(None, gt=0, alias="storage.read.gbps")
    storage_write_gbps: float | None = Field(None, gt=0, alias="storage.write.gbps")
    storage_load_gbps: float | None = Field(None, gt=0, alias="storage.load.gbps")
    storage_load_s: float | None = Field(None, gt=0, alias="storage.load.s")
    # MLPerf Storage's KV-cache benchmark defaults
    kv_disk_write_p95_ms: float = Field(500.0, gt=0, alias="kv.disk.write_p95_ms")
    kv_disk_read_p95_ms: float = Field(200.0, gt=0, alias="kv.disk.read_p95_ms")
    kv_object_put_p95_ms: float | None = Field(None, gt=0, alias="kv.object.put_p95_ms")
    kv_object_get_p95_ms: float | None = Field(None, gt=0, alias="kv.object.get_p95_ms")


def parse_expect(items: list[str]) -> Expect:
    """``["net.gbps=1", ...]`` -> :class:`Expect`; ConfigError naming --expect for a bad item."""
    known = {str(f.alias): name for name, f in Expect.model_fields.items()}
    values: dict[str, float] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in known:
            raise ConfigError(f"--expect {item!r}: expected KEY=VALUE with KEY one of {', '.join(known)}")
        try:
            values[key.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"--expect {item!r}: {value!r} is not a number") from None
    return Expect.model_validate(values)


class IoConfig(BaseModel):
    """Everything one ``seatrial io`` run does (the CLI's flags; unknown keys refused)."""

    model_config = ConfigDict(extra="forbid")

    trials: list[str] = Field(default_factory=lambda: list(IO_TRIAL_NAMES))
    repeats: int = Field(3, ge=1, le=20)
    max_cv: float = Field(0.15, gt=0)  # a spread over this (SD / mean of the repeats) is REVIEW_REQUIRED
    path: str | None = None  # where the scratch folder goes; default: the checkpoint's parent folder
    checkpoint: str | None = None
    expect: Expect = Field(default_factory=Expect)
    runtime_s: float = Field(10.0, gt=0)  # fio's time per measurement
    size_mib: int = Field(1024, ge=1)  # fio's file per job
    jobs: int = Field(4, ge=1)
    kv_chunk_bytes: int = Field(DEFAULT_KV_CHUNK_BYTES, ge=4096)
    kv_chunk_source: str = "default (1 MiB)"
    kv_concurrency: list[int] = Field(default_factory=lambda: [1, 4, 16])
    kv_chunks: int = Field(256, ge=1)  # chunks written then read per concurrency level
    net_seconds: float = Field(5.0, gt=0)
    net_streams: int = Field(4, ge=1)
    net_port: int = Field(5201, gt=0, lt=65536)
    pairs: list[tuple[str, str]] | None = None
    ray: str | None = None  # net.nccl: the Ray cluster whose nodes it runs across
    nccl_backend: Literal["nccl", "gloo"] = "nccl"  # gloo: one CPU rank per node, the same code path
    nccl_max_mib: int = Field(256, ge=1, le=8192)  # message sizes 1 MiB .. this, powers of two
    nccl_timeout_s: float = Field(900.0, gt=0)
    s3_endpoint: str | None = None
    s3_bucket: str | None = None
    fleet_margin: float = Field(0.10, gt=0, lt=1)

    @field_validator("trials")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        chosen = [t for t in IO_TRIAL_NAMES if any(t == w or t.startswith(w + ".") for w in value)]
        unknown = [w for w in value if not any(t == w or t.startswith(w + ".") for t in IO_TRIAL_NAMES)]
        if unknown or not chosen:
            raise ValueError(
                f"unknown trial {', '.join(unknown) or value!r}; known: {', '.join(IO_TRIAL_NAMES)}"
            )
        return chosen
