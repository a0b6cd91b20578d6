"""``seatrial trial PLAN.yaml``: the plan, validated (a bad plan is exit 2 naming the key and what it expected).

- ``deployment``: the checkpoint (or ``tiny_model: true``: seatrial's tiny random-weight model, made in the
  trial's folder: the demo's), the nodes (``local``, ssh nodes as sync/doctor take them, or ``{ray: ADDRESS}``),
  GPUs per node, the GPU-hour price, the hardware the memory plan assumes.
- ``serve``: how a candidate starts (experiment's ``serve:`` block); ``{model}`` in its command is the
  candidate's checkpoint, ``{port}`` a free port at each start.
- ``candidates``: named server configurations: args and env over ``serve``, the GPUs a replica takes, the
  memory plan's launch settings, a conversion of the checkpoint.
- ``profiles``: named SLOs with their attainment, the workload (bench's settings) and the service's peak.
- ``stages``: which stages run and each one's settings; every default is stated here, in the models.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from seatrial.capacity.config import CapacityConfig
from seatrial.load.goodput import parse_slo
from seatrial.load.settings import BenchSettings
from seatrial.server.serve import Serve

STAGES = ("checkpoint", "hardware", "io", "fleet", "serving", "capacity", "decision")
StageName = Literal["checkpoint", "hardware", "io", "fleet", "serving", "capacity", "decision"]
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
#: bench settings a profile may not set: the capacity search sets the load of each probe itself
LOAD_KEYS = ("concurrency", "rate", "max_concurrency", "requests", "ramp_up", "ramp_up_start", "ramp_up_end")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _name(v: str) -> str:
    if not NAME.match(v):
        raise ValueError(f"{v!r} is not a name (letters, digits, '_', '.', '-'; at most 63)")
    return v


class RayNodes(_Model):
    ray: str = Field(min_length=1, description="Ray cluster address (hw and io run on every node)")


class Deployment(_Model):
    checkpoint: Path | None = Field(
        None, description="The checkpoint folder (safetensors, config.json), or a GGUF file (llama.cpp)"
    )
    tiny_model: bool = Field(False, description="seatrial's tiny random-weight model, made in the trial folder")
    nodes: Literal["local"] | list[str] | RayNodes = Field(
        "local", description="local; the checkpoint's places on the nodes as sync takes them ([user@]host:/path, "
        "local:/path); or {ray: ADDRESS}"
    )
    gpus_per_node: int = Field(1, ge=1)
    gpu_hour_usd: float | None = Field(None, gt=0, description="Price of one GPU hour, USD (cost per 1M tokens)")
    hardware: str = Field("local", description="The memory plan's hardware profile (seatrial plan --hardware)")

    @model_validator(mode="after")
    def _one_checkpoint(self) -> Deployment:
        if (self.checkpoint is None) == (not self.tiny_model):
            raise ValueError("give checkpoint (a folder) or tiny_model: true, not both and not neither")
        return self

    @field_validator("nodes")
    @classmethod
    def _places(cls, v: object) -> object:
        if isinstance(v, list):
            from seatrial.fleet.nodes import parse_place

            if not v:
                raise ValueError("give at least one node, or local")
            from seatrial.errors import ConfigError

            for spec in v:
                try:
                    parse_place(spec)
                except ConfigError as exc:
                    raise ValueError(str(exc)) from None
        return v

    @property
    def places(self) -> list[str]:
        """The checkpoint's places on the nodes (none for ``local`` and Ray)."""
        return self.nodes if isinstance(self.nodes, list) else []

    @property
    def ssh_hosts(self) -> list[str]:
        """The ssh hosts the places name, once each (a ``local:`` place is this host)."""
        from seatrial.fleet.nodes import parse_place

        return list(dict.fromkeys(h for p in self.places if (h := parse_place(p).host)))


class LaunchPlan(_Model):
    """The launch settings ``seatrial plan`` checks a candidate with (vLLM's names)."""

    max_model_len: int | None = Field(None, ge=1)
    tensor_parallel_size: int = Field(1, ge=1)
    pipeline_parallel_size: int = Field(1, ge=1)
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    kv_cache_gib: float | None = Field(None, gt=0)
    host_reserve_gib: float = Field(12.0, ge=0)
    max_num_seqs: int | None = Field(None, ge=1)
    kv_cache_dtype: str = "auto"
    weights_from_config: bool = False


class Candidate(_Model):
    name: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    gpus: int = Field(1, ge=1, description="GPUs one replica takes")
    plan: LaunchPlan | None = Field(None, description="Checked before any start; a misfit drops the candidate")
    convert: dict[str, Any] | None = Field(None, description="seatrial convert's options (not src/dst): its output is {model}")

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        return _name(v)

    @field_validator("convert")
    @classmethod
    def _convert(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is None:
            return v
        if paths := [k for k in ("src", "dst", "resume") if k in v]:
            raise ValueError(f"{', '.join(paths)}: the trial sets these itself")
        from seatrial.checkpoint.convert.options import ConvertOptions

        ConvertOptions.model_validate({**v, "src": ".", "dst": "."})
        return v


class Profile(_Model):
    name: str
    slo: dict[str, float]
    attainment: float = Field(0.9, gt=0, lt=1)
    workload: dict[str, Any] = Field(default_factory=dict, description="bench's settings (not the load)")
    peak_req_s: float = Field(gt=0, description="The service's peak, req/s")

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        return _name(v)

    _slo = field_validator("slo", mode="before")(classmethod(lambda cls, v: parse_slo(v)))

    @field_validator("workload")
    @classmethod
    def _workload(cls, v: dict[str, Any]) -> dict[str, Any]:
        if load := [k for k in v if k in LOAD_KEYS]:
            raise ValueError(f"{', '.join(load)}: the capacity stage sets the load of each probe itself")
        BenchSettings.model_validate(v)
        return v

    def bench(self) -> BenchSettings:
        return BenchSettings.model_validate(self.workload)


class HardwareStage(_Model):
    duration_s: float = Field(10.0, gt=0, description="seatrial hw --duration")
    trials: list[str] | None = Field(None, description="hw's trials; default: all")
    expect_gpus: int | None = Field(None, ge=1)


class IoStage(_Model):
    trials: list[str] = Field(default_factory=lambda: ["storage.read", "storage.write", "storage.load"])
    repeats: int = Field(3, ge=1, le=20)
    runtime_s: float = Field(10.0, gt=0)
    size_mib: int = Field(1024, ge=1)
    jobs: int = Field(4, ge=1)
    max_cv: float = Field(0.15, gt=0, description="a spread of the repeats over this is REVIEW_REQUIRED")
    path: Path | None = Field(None, description="Scratch parent; default: the checkpoint's parent folder")


class ServingStage(_Model):
    scale: Literal["small", "full"] = "small"
    trials: list[str] | None = Field(None, description="accept's trials; default: the profile's")
    profile: Path | None = Field(None, description="accept's profile YAML; default: the built-in one")


def _search(name: str, default: Any = None) -> Any:
    """CapacityConfig's field ``name`` (one definition of its limits and help), with the trial's ``default``."""
    from pydantic.fields import FieldInfo

    info = CapacityConfig.model_fields[name]
    return info if default is None else FieldInfo.merge_field_infos(info, default=default)


class CapacityStage(_Model):
    """The capacity search over fresh starts (capacity --serve --starts), per candidate and profile, in
    requests per second (open-loop arrivals: a profile's peak is a rate)."""

    starts: int = Field(2, ge=1)
    # the search's own fields (limits, help), with the trial's defaults where they differ from one search's
    confidence: float = _search("confidence", 0.9)
    start: float | None = _search("start")
    min_rate: float | None = _search("min_rate")
    max_rate: float | None = _search("max_rate")
    precision: float = _search("precision", 0.1)
    probe_requests: int | None = _search("probe_requests")
    max_probe_requests: int | None = _search("max_probe_requests")
    time_budget: str | None = _search("time_budget", "10m")  # per start

    @model_validator(mode="after")
    def _as_capacity_takes_it(self) -> CapacityStage:
        """The search's own rules (a time budget's spelling, a floor above the first probe) judge it when the plan
        is read, not hours later when stage 5 starts."""
        from pydantic import ValidationError

        from seatrial.errors import validation_message

        try:
            CapacityConfig(slo={"ttft_ms": 1.0}, **self.model_dump(exclude={"starts"}))
        except ValidationError as exc:
            raise ValueError(validation_message(exc)) from None
        return self

    def config(self, profile: Profile, gpus: int) -> CapacityConfig:
        """The search of one start (the peak and the price are the decision's: an edit of them re-runs only that)."""
        keep = self.model_dump(exclude={"starts"})
        return CapacityConfig(slo=profile.slo, attainment=profile.attainment, gpus=gpus, **keep)


class Stages(_Model):
    run: list[StageName] = Field(default_factory=lambda: list(get_args(StageName)))
    hardware: HardwareStage = Field(default_factory=HardwareStage)
    io: IoStage = Field(default_factory=IoStage)
    serving: ServingStage = Field(default_factory=ServingStage)
    capacity: CapacityStage = Field(default_factory=CapacityStage)


class TrialPlan(_Model):
    deployment: Deployment
    serve: Serve
    candidates: list[Candidate] = Field(min_length=1)
    profiles: list[Profile] = Field(min_length=1)
    stages: Stages = Field(default_factory=Stages)

    @field_validator("serve", mode="before")
    @classmethod
    def _guarded(cls, v: object) -> object:
        """Every start runs under ``seatrial guard``: its default flags where ``serve.guard`` gives none."""
        return {**v, "guard": v.get("guard") or {}} if isinstance(v, dict) else v

    @model_validator(mode="after")
    def _unique(self) -> TrialPlan:
        for what, names in (("candidate", [c.name for c in self.candidates]), ("profile", [p.name for p in self.profiles])):
            if dup := sorted({n for n in names if names.count(n) > 1}):
                raise ValueError(f"{what} names must differ: {', '.join(dup)} twice")
        if not any("{model}" in part for part in self.serve.command):
            raise ValueError("serve.command must contain {model} (each candidate's checkpoint)")
        return self


def load_plan(path: Path) -> TrialPlan:
    """The plan in ``path``; ConfigError (exit 2) naming the key and what it expected."""
    from seatrial.errors import config_errors
    from seatrial.yamlfile import load_mapping

    doc = load_mapping(str(path), path)
    with config_errors(str(path)):
        return TrialPlan.model_validate(doc)
