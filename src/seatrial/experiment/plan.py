"""The experiment plan (YAML), validated by one model: how to serve, the baseline and its treatments,
the workload measured at every start, how many fresh starts, in which order, and how to decide.

A treatment must differ from the baseline in exactly one setting (one flag of the server command or one
environment variable); a treatment identical to the baseline is an A/A control. Anything else is refused
(exit 2) naming every difference, unless ``allow_multi`` is set.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import orjson
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from seatrial.errors import ConfigError
from seatrial.load.config import Arrival, BenchConfig, Endpoint, Stamps, WorkloadName

#: Metrics a decision or a guardrail can name: a level's throughput (one value per start) or a
#: request-level distribution (``ttft_ms.p99``, pooled over the starts' requests).
THROUGHPUTS = ("output_tok_s", "total_tok_s", "request_s")
DISTRIBUTIONS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms", "per_user_output_tok_s")
STATS = ("mean", "p50", "p90", "p95", "p99")
LOWER_IS_BETTER = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def check_metric(name: str) -> str:
    base, _, stat = name.partition(".")
    if base in THROUGHPUTS and not stat:
        return name
    if base in DISTRIBUTIONS and stat in STATS:
        return name
    known = [*THROUGHPUTS, *(f"{d}.{s}" for d in DISTRIBUTIONS for s in STATS)]
    raise ValueError(f"unknown metric {name!r}; known: {', '.join(known)}")


def lower_is_better(metric: str) -> bool:
    return metric.partition(".")[0] in LOWER_IS_BETTER


class GuardSettings(_Model):
    """``seatrial guard`` around every start (its flags, by their names). The experiment's stops are
    planned (SIGTERM, recorded as ``stop``) and never spend the restart budget; a start that crashes is
    a failed start, which the experiment itself tries again, so the guard restarts nothing by default."""

    min_available_gib: float = Field(12.0, ge=0)
    max_swap_growth_gib: float = Field(2.0, gt=0)
    poll_ms: int = Field(200, gt=0)
    restart_budget: int = Field(0, ge=0)
    restart_window: str = "6h"
    oom_score_adj: int = Field(1000, ge=-1000, le=1000)
    stop_grace: str = "30s"

    def flags(self) -> list[str]:
        out: list[str] = []
        for key, value in self.model_dump().items():
            out += [f"--{key.replace('_', '-')}", str(value)]
        return out


class Serve(_Model):
    command: list[str] = Field(min_length=1)  # ``{port}`` is filled in at every start
    env: dict[str, str] = Field(default_factory=dict)
    host: str = "127.0.0.1"
    health_path: str = "/health"
    ready_timeout_s: float = Field(900.0, gt=0)
    stop_grace_s: float = Field(60.0, gt=0)
    guard: GuardSettings | None = None

    @field_validator("command")
    @classmethod
    def _port(cls, v: list[str]) -> list[str]:
        if not any("{port}" in part for part in v):
            raise ValueError("the command must contain {port} (each start gets a free port)")
        return v


class Setting(_Model):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


class Workload(_Model):
    """What ``seatrial bench`` takes, by the same names."""

    model: str | None = None
    tokenizer: Path | None = None
    endpoint: Endpoint = "completions"
    api_key_env: str = "OPENAI_API_KEY"
    workload: WorkloadName = "random"
    input_len: int = Field(256, ge=1)
    output_len: int = Field(64, ge=1)
    ignore_eos: bool = True
    seed: int | None = None  # one for the whole experiment: every start sends the same prompts
    prefix_len: int = Field(512, ge=1)
    num_prefixes: int = Field(4, ge=1)
    long_share: float = Field(0.2, ge=0, le=1)
    long_input_len: int = Field(2048, ge=1)
    file: Path | None = None
    concurrency: list[int] = Field(default_factory=lambda: [1])
    rate: float | None = Field(None, gt=0)
    max_concurrency: int | None = Field(None, ge=1)
    arrival: Arrival = "poisson"
    requests: int = Field(32, ge=1)
    warmup: int = Field(4, ge=0)
    timeout_s: float = Field(600.0, gt=0)
    stall_timeout_s: float = Field(120.0, gt=0)
    max_error_rate: float = Field(0.0, ge=0, le=1)
    max_lag_ms: float = Field(50.0, gt=0)
    stamps: Stamps = "kernel"
    workers: int = Field(1, ge=1)  # client processes sharing each level
    ray: str | None = None  # or Ray client actors (--clients of them) on this cluster
    clients: int = Field(2, ge=1)

    @field_validator("concurrency", mode="before")
    @classmethod
    def _levels(cls, v: Any) -> Any:
        return [v] if isinstance(v, int) else v

    def bench_config(self, url: str, seed: int) -> BenchConfig:
        w = self
        return BenchConfig.model_validate(
            {
                "target": {"url": url, "model": w.model, "tokenizer": w.tokenizer, "endpoint": w.endpoint,
                           "api_key_env": w.api_key_env},
                "workload": {"name": w.workload, "input_len": w.input_len, "output_len": w.output_len,
                             "ignore_eos": w.ignore_eos, "seed": seed, "prefix_len": w.prefix_len,
                             "num_prefixes": w.num_prefixes, "long_share": w.long_share,
                             "long_input_len": w.long_input_len, "file": w.file},
                "load": {"concurrency": w.concurrency, "rate": w.rate, "max_concurrency": w.max_concurrency,
                         "arrival": w.arrival, "requests": w.requests, "warmup": w.warmup,
                         "timeout_s": w.timeout_s, "stall_timeout_s": w.stall_timeout_s,
                         "max_error_rate": w.max_error_rate, "max_lag_ms": w.max_lag_ms, "stamps": w.stamps,
                         "workers": w.workers, "ray": w.ray, "clients": w.clients},
            }
        )  # fmt: skip


class DecisionProfile(_Model):
    """One profile judged apart (seed 000: interactive C=4, batch C=8)."""

    concurrency: int = Field(ge=1)
    metric: str = "output_tok_s"
    higher_is_better: bool | None = None  # default: from the metric (latencies lower, rates higher)
    min_gain_pct: float = Field(5.0, ge=0)

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        return check_metric(v)

    @property
    def better_higher(self) -> bool:
        return not lower_is_better(self.metric) if self.higher_is_better is None else self.higher_is_better


class Guardrail(_Model):
    """A metric a treatment must not worsen by more than ``margin_pct`` (non-inferiority)."""

    metric: str
    margin_pct: float = Field(gt=0)
    higher_is_better: bool | None = None

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        return check_metric(v)

    @property
    def better_higher(self) -> bool:
        return not lower_is_better(self.metric) if self.higher_is_better is None else self.higher_is_better


class Decide(_Model):
    profiles: dict[str, DecisionProfile] = Field(min_length=1)
    guardrails: list[Guardrail] = Field(default_factory=list)
    confidence: float = Field(0.95, gt=0.5, lt=1)


class ExperimentPlan(_Model):
    serve: Serve
    baseline: Setting
    treatments: list[Setting] = Field(min_length=1)
    workload: Workload
    starts: int = Field(3, ge=2)
    order: Literal["interleaved", "random"] = "interleaved"
    seed: int = 0  # the order's, with ``random``; and the prompts', when the workload names none
    decide: Decide
    allow_multi: bool = False
    retries: int = Field(1, ge=0)  # a start that does not come up is tried again this many times

    @model_validator(mode="after")
    def _checks(self) -> ExperimentPlan:
        names = [self.baseline.name, *(t.name for t in self.treatments)]
        if len(set(names)) != len(names):
            raise ValueError(f"setting names must differ, got {names}")
        levels = set(self.workload.concurrency) if self.workload.rate is None else set()
        for name, p in self.decide.profiles.items():
            if levels and p.concurrency not in levels:
                raise ValueError(
                    f"decide.profiles.{name}.concurrency {p.concurrency} is not a workload level {sorted(levels)}"
                )
        return self

    @property
    def settings(self) -> list[Setting]:
        return [self.baseline, *self.treatments]

    def fingerprint(self) -> str:
        """What ``--resume`` checks: the plan that started the folder."""
        return hashlib.sha256(
            orjson.dumps(self.model_dump(mode="json"), option=orjson.OPT_SORT_KEYS)
        ).hexdigest()


def _flags(args: list[str]) -> dict[str, str | None]:
    """``["--a", "1", "--b", "--c=2"]`` -> ``{"--a": "1", "--b": None, "--c": "2"}`` (a value is the next
    word that is not a flag)."""
    out: dict[str, str | None] = {}
    i = 0
    while i < len(args):
        word = args[i]
        name, eq, value = word.partition("=")
        if word.startswith("-") and eq:
            out[name] = value
        elif word.startswith("-"):
            nxt = args[i + 1] if i + 1 < len(args) else None
            out[word] = nxt if nxt is not None and not nxt.startswith("-") else None
            i += out[word] is not None
        else:
            out[f"(argument {i})"] = word
        i += 1
    return out


def differences(baseline: Setting, treatment: Setting) -> list[str]:
    """Every setting in which ``treatment`` differs from ``baseline``, in words."""
    a, b = _flags(baseline.args), _flags(treatment.args)
    out = []
    for flag in sorted(a.keys() | b.keys()):
        if flag not in b:
            out.append(f"{flag} dropped (baseline {a[flag] or 'set'})")
        elif flag not in a:
            out.append(f"{flag} {b[flag] or ''} added".replace("  ", " "))
        elif a[flag] != b[flag]:
            out.append(f"{flag} {a[flag]} -> {b[flag]}")
    for key in sorted(baseline.env.keys() | treatment.env.keys()):
        x, y = baseline.env.get(key), treatment.env.get(key)
        if x != y:
            out.append(f"env {key}: {x if x is not None else 'unset'} -> {y if y is not None else 'unset'}")
    return out


def check_single_variable(plan: ExperimentPlan) -> dict[str, list[str]]:
    """Each treatment's differences; ConfigError when one differs in more than one setting (unless
    ``allow_multi``). An empty list marks an A/A control."""
    found = {t.name: differences(plan.baseline, t) for t in plan.treatments}
    if not plan.allow_multi:
        for name, diffs in found.items():
            if len(diffs) > 1:
                raise ConfigError(
                    f"treatment {name!r} differs from the baseline {plan.baseline.name!r} in {len(diffs)} settings "
                    f"({'; '.join(diffs)}): one at a time, or set allow_multi: true"
                )
    return found


def load_plan(path: Path) -> ExperimentPlan:
    """The plan at ``path``; a ConfigError naming the field on any problem."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        plan = ExperimentPlan.model_validate(raw)
    except ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'plan'}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{path}: {msgs}") from None
    check_single_variable(plan)
    return plan


def schedule(plan: ExperimentPlan) -> list[tuple[str, int]]:
    """(setting, start index) in the order they run: ``interleaved`` blocks of every setting, forward then
    backward (ABBA...), so that drift over the run falls on every setting alike; or ``random`` with the
    plan's seed."""
    names = [s.name for s in plan.settings]
    if plan.order == "random":
        import random

        runs = [(n, k) for k in range(plan.starts) for n in names]
        random.Random(plan.seed).shuffle(runs)
        return runs
    out = []
    for k in range(plan.starts):
        block = names if k % 2 == 0 else names[::-1]
        out += [(n, k) for n in block]
    return out
