"""Trial profiles: which trials run, at what sizes, against which limits (YAML, validated).

A profile file holds the full-scale sizes plus an optional ``small:`` tree of overrides with the
same shape; ``--scale small`` deep-merges it over the rest (sizes and ladders for a CPU server).
Lengths are in the server's tokens, times in milliseconds.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from seatrial.errors import ConfigError

TRIAL_NAMES = ("basic", "context", "mixed", "saturation", "prefix-cache", "kv-tier")
Scale = Literal["small", "full"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Slo(_Model):
    """The service-level objective a step must meet, at the ``percentile``-th percentile."""

    ttft_ms: float = Field(2000.0, gt=0)
    itl_ms: float | None = Field(None, gt=0)
    percentile: float = Field(99.0, ge=50, lt=100)


class BasicConfig(_Model):
    requests: int = Field(32, ge=1)
    input_len: int = Field(128, ge=1)
    output_len: int = Field(64, ge=2)


class ContextConfig(_Model):
    short_len: int = Field(1024, ge=1)
    long_len: int = Field(32768, ge=1)
    output_len: int = Field(32, ge=2)
    requests: int = Field(20, ge=1)


class MixedConfig(_Model):
    """Seed 004 §9-10: R0 ISO->MIX discarded, then alternating MIX->ISO / ISO->MIX rounds."""

    rounds: int = Field(5, ge=2)
    short_requests: int = Field(32, ge=1)
    short_concurrency: int = Field(4, ge=1)
    short_input_len: int = Field(128, ge=1)
    short_output_len: int = Field(64, ge=2)
    long_input_len: int = Field(8192, ge=1)
    long_concurrency: int = Field(2, ge=1)
    max_degradation_pct: float = 50.0
    min_direction_consistency: float = Field(0.75, gt=0.5, le=1.0)
    order_delta_limit_pct: float = Field(10.0, ge=0)
    max_speedup_pct: float = Field(10.0, ge=0)
    # a MIX phase with a long prefill in flight for less of its time than this measured no interference
    min_long_share: float = Field(0.5, ge=0, le=1)


class SaturationConfig(_Model):
    ladder: list[int] = Field(default_factory=lambda: [64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048])
    requests_per_user: int = Field(2, ge=1)
    min_requests: int = Field(1000, ge=1)
    warmup: int = Field(2, ge=0)
    input_len: int = Field(512, ge=1)
    output_len: int = Field(128, ge=2)
    extend_factor: float = Field(1.5, gt=1.0)
    max_concurrency: int = Field(4096, ge=1)
    plateau_gain: float = Field(0.10, ge=0)
    kv_usage_high: float = Field(0.95, gt=0, le=1)
    cliff_factor: float = Field(3.0, gt=1)
    target_concurrency: int | None = Field(None, ge=1)


class PrefixCacheConfig(_Model):
    num_prefixes: int = Field(4, ge=1)
    prefix_len: int = Field(4096, ge=1)
    questions_per_prefix: int = Field(16, ge=2)
    question_len: int = Field(64, ge=1)
    output_len: int = Field(8, ge=1)
    concurrency: int = Field(4, ge=1)
    block_size: int | None = Field(None, ge=1)
    review_share: float = Field(0.5, gt=0, le=1)
    good_improvement_pct: float = Field(20.0, ge=0)


class KvTierConfig(_Model):
    capacity_tokens: int | None = Field(None, ge=1)
    pressure_factor: float = Field(1.5, gt=1)
    session_len: int = Field(8192, ge=16)
    question_len: int = Field(32, ge=1)
    output_len: int = Field(8, ge=1)
    concurrency: int = Field(4, ge=1)
    max_working_set_tokens: int = Field(8_000_000, ge=1)
    baseline_url: str | None = None  # the same model served with KV offload off, to compare


class Trials(_Model):
    basic: BasicConfig = Field(default_factory=lambda: BasicConfig())
    context: ContextConfig = Field(default_factory=lambda: ContextConfig())
    mixed: MixedConfig = Field(default_factory=lambda: MixedConfig())
    saturation: SaturationConfig = Field(default_factory=lambda: SaturationConfig())
    prefix_cache: PrefixCacheConfig = Field(default_factory=lambda: PrefixCacheConfig(), alias="prefix-cache")
    kv_tier: KvTierConfig = Field(default_factory=lambda: KvTierConfig(), alias="kv-tier")


class Profile(_Model):
    scale: Scale = "full"  # set by load_profile from --scale
    run: list[str] = Field(default_factory=lambda: list(TRIAL_NAMES))
    slo: Slo = Field(default_factory=lambda: Slo())
    timeout_s: float = Field(600.0, gt=0)
    stall_timeout_s: float = Field(120.0, gt=0)
    max_lag_ms: float = Field(50.0, gt=0)
    trials: Trials = Field(default_factory=lambda: Trials())

    @model_validator(mode="after")
    def _known(self) -> Profile:
        check_names(self.run, "run")
        return self


def check_names(names: list[str], where: str) -> list[str]:
    unknown = [n for n in names if n not in TRIAL_NAMES]
    if unknown:
        raise ValueError(f"{where}: unknown trial(s) {', '.join(unknown)}; known: {', '.join(TRIAL_NAMES)}")
    return names


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def default_profile_text() -> str:
    return resources.files("seatrial.trials").joinpath("default_profile.yaml").read_text(encoding="utf-8")


def load_profile(path: Path | None, scale: Scale) -> Profile:
    """The profile at ``path`` (or the shipped default) at ``scale``; a clear ConfigError if invalid."""
    where = str(path) if path else "default profile"
    try:
        text = path.read_text(encoding="utf-8") if path else default_profile_text()
        raw = yaml.safe_load(text) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"--profile {where}: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"--profile {where}: expected a mapping at the top level")
    small = raw.pop("small", None) or {}
    if scale == "small":
        raw = deep_merge(raw, small)
    try:
        return Profile.model_validate({**raw, "scale": scale})
    except ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"--profile {where} (scale {scale}): {msgs}") from None
