"""Trial profiles: which trials run, at what sizes, against which limits (YAML, validated).

A profile file holds the full-scale sizes plus an optional ``small:`` tree of overrides with the
same shape; ``--scale small`` deep-merges it over the rest (sizes and ladders for a CPU server).
Lengths are in the server's tokens, times in milliseconds.
"""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, SerializeAsAny, create_model, field_validator, model_validator

from seatrial.errors import config_errors
from seatrial.trials.configs import Slo, TrialConfig
from seatrial.trials.registry import TRIAL_NAMES, TRIALS
from seatrial.yamlfile import load_mapping

__all__ = ["TRIAL_NAMES", "Profile", "Scale", "check_names", "load_profile"]
Scale = Literal["small", "full"]
C = TypeVar("C", bound=TrialConfig)


def _field(name: str) -> str:
    return name.replace("-", "_")


@functools.cache
def trials_model() -> type[BaseModel]:
    """The model of a profile's ``trials:`` tree: one entry per registered trial (its name as the key), each
    validated by its config model (made on first use, from the registry as it is then)."""
    fields: dict[str, Any] = {
        _field(n): (t.config, Field(default_factory=t.config, alias=n)) for n, t in TRIALS.items()
    }
    return create_model("Trials", __base__=TrialConfig, **fields)


class Profile(TrialConfig):
    scale: Scale = "full"  # set by load_profile from --scale
    run: list[str] = Field(default_factory=lambda: list(TRIALS))
    slo: Slo = Field(default_factory=lambda: Slo())
    timeout_s: float = Field(600.0, gt=0)
    stall_timeout_s: float = Field(120.0, gt=0)
    max_lag_ms: float = Field(50.0, gt=0)
    trials: SerializeAsAny[BaseModel] = Field(default_factory=lambda: trials_model()())

    @field_validator("trials", mode="before")
    @classmethod
    def _trials(cls, value: Any) -> BaseModel:
        model = trials_model()
        return value if isinstance(value, model) else model.model_validate(value)

    @model_validator(mode="after")
    def _known(self) -> Profile:
        check_names(self.run, "run")
        return self

    def config(self, kind: type[C]) -> C:
        """This profile's config of the trial whose config model is ``kind``."""
        name = next(n for n, t in TRIALS.items() if t.config is kind)
        value = getattr(self.trials, _field(name))
        assert isinstance(value, kind)
        return value


def check_names(names: list[str], where: str) -> list[str]:
    unknown = [n for n in names if n not in TRIALS]
    if unknown:
        raise ValueError(f"{where}: unknown trial(s) {', '.join(unknown)}; known: {', '.join(TRIALS)}")
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
    raw = load_mapping(f"--profile {where}", path, None if path else default_profile_text())
    small = raw.pop("small", None) or {}
    if scale == "small":
        raw = deep_merge(raw, small)
    with config_errors(f"--profile {where} (scale {scale})"):
        return Profile.model_validate({**raw, "scale": scale})
