"""The experiment plan (YAML), validated by one model: how to serve, the baseline and its treatments,
the workload measured at every start, how many fresh starts, in which order, and how to decide.

A treatment must differ from the baseline in exactly one setting (one flag of the server command or one
environment variable); a treatment identical to the baseline is an A/A control. Anything else is refused
(exit 2) naming every difference, unless ``allow_multi`` is set.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from seatrial.capacity.config import CapacityConfig
from seatrial.errors import ConfigError, config_errors
from seatrial.load.metric_table import LEVEL_METRICS, REQUEST_METRICS, lower_is_better
from seatrial.load.settings import BenchSettings
from seatrial.load.workloads import WORKLOADS
from seatrial.server.serve import Serve
from seatrial.yamlfile import load_mapping

#: Metrics a decision or a guardrail can name (load.metric_table): a level metric (one value per start), a
#: request metric's statistic (``ttft_ms.p99``, pooled over the starts' requests), or a capacity.
CAPACITY = "capacity"  # the load a start carried within an SLO (seatrial capacity's search, per start)
SEARCH_LEVEL = 0  # where a start's capacities are kept among its levels (no bench level has concurrency 0)
STATS = ("mean", "p50", "p90", "p95", "p99")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def check_metric(name: str) -> str:
    base, _, stat = name.partition(".")
    if (base in LEVEL_METRICS and not stat) or name == CAPACITY:
        return name
    if base in REQUEST_METRICS and stat in STATS:
        return name
    known = [*LEVEL_METRICS, CAPACITY, *(f"{d}.{s}" for d in REQUEST_METRICS for s in STATS)]
    raise ValueError(f"unknown metric {name!r}; known: {', '.join(known)}")


class Setting(_Model):
    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


class DecisionProfile(_Model):
    """One profile judged apart (seed 000: interactive C=4, batch C=8). ``metric: capacity`` runs
    ``seatrial capacity``'s search (``capacity:``: its SLO, attainment, mode...) on every start and decides on
    the capacity each start found (one value per start, as throughput); it has no level of its own."""

    concurrency: int | None = Field(None, ge=1)
    metric: str = "output_tok_s"
    higher_is_better: bool | None = None  # default: from the metric (latencies lower, rates higher)
    min_gain_pct: float = Field(5.0, ge=0)
    capacity: CapacityConfig | None = None

    @field_validator("metric")
    @classmethod
    def _metric(cls, v: str) -> str:
        return check_metric(v)

    @model_validator(mode="after")
    def _capacity(self) -> DecisionProfile:
        if self.metric == CAPACITY and self.capacity is None:
            raise ValueError("metric capacity needs capacity: {slo: ..., attainment: ..., mode: ...}")
        if self.metric != CAPACITY and self.capacity is not None:
            raise ValueError(f"capacity: is for metric capacity, not {self.metric}")
        if self.metric == CAPACITY and self.concurrency is not None:
            raise ValueError("a capacity profile searches its own loads: leave out concurrency")
        if self.metric != CAPACITY and self.concurrency is None:
            raise ValueError("concurrency: the level this profile is decided at")
        return self

    @property
    def at(self) -> int:
        """The level this profile is decided at: its concurrency, or :data:`SEARCH_LEVEL` where a capacity
        profile's values are kept (one per start, beside the bench levels)."""
        return SEARCH_LEVEL if self.concurrency is None else self.concurrency

    def key(self, name: str) -> str:
        """The name of this profile's per-start value: its metric, or ``capacity:<profile>`` (each
        capacity profile has a search of its own)."""
        return f"{CAPACITY}:{name}" if self.metric == CAPACITY else self.metric

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
    workload: BenchSettings  # what `seatrial bench` takes, by the same names
    starts: int = Field(4, ge=2)
    order: Literal["interleaved", "random"] = "interleaved"
    seed: int = 0  # the order's, with ``random``; and the prompts', when the workload names none
    decide: Decide
    allow_multi: bool = False
    retries: int = Field(1, ge=0)  # a start that does not come up is tried again this many times
    # a setting with a start that did not come up or measured an INVALID level is decided from the others
    allow_failed_starts: bool = False

    @model_validator(mode="after")
    def _checks(self) -> ExperimentPlan:
        names = [self.baseline.name, *(t.name for t in self.treatments)]
        if len(set(names)) != len(names):
            raise ValueError(f"setting names must differ, got {names}")
        if self.workload.otlp_listen is not None:
            flagged = [a for a in [*self.serve.command, *(x for s in self.settings for x in s.args)]
                       if a == "--disable-log-stats"]  # fmt: skip
            if flagged:
                raise ValueError(
                    "workload.otlp_listen asks the starts for spans, which vLLM 0.32 cannot export with "
                    "--disable-log-stats (it then fails every request): drop that flag"
                )
        wl = self.workload
        closed = wl.rate is None and wl.ramp_up is None and not WORKLOADS[wl.workload].timed
        levels = set(wl.concurrency) if closed else set()
        for name, p in self.decide.profiles.items():
            if levels and p.concurrency is not None and p.concurrency not in levels:
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
    raw = load_mapping(str(path), path)
    with config_errors(str(path)):
        plan = ExperimentPlan.model_validate(raw)
    check_single_variable(plan)
    return plan


def schedule(plan: ExperimentPlan) -> list[tuple[str, int]]:
    """(setting, start index) in the order they run, in blocks of one start of every setting:
    ``interleaved`` runs the blocks forward then backward (ABBA...), so that a linear drift over the run
    falls on every setting alike (exactly, with an even number of starts); ``random`` runs each block in
    its own random permutation (the plan's seed)."""
    names = [s.name for s in plan.settings]
    rng = random.Random(plan.seed)
    out = []
    for k in range(plan.starts):
        if plan.order == "random":
            block = rng.sample(names, len(names))
        else:
            block = names if k % 2 == 0 else names[::-1]
        out += [(n, k) for n in block]
    return out


def order_warnings(plan: ExperimentPlan) -> list[str]:
    """What the order cannot do for this plan, in words."""
    if plan.order == "interleaved" and plan.starts % 2:
        gap = (len(plan.settings) - 1) / plan.starts
        return [
            f"starts: {plan.starts} with interleaved (ABBA) order: a linear drift cancels only over an even "
            f"number of starts; with {plan.starts}, up to {gap:.2g} of a slot's drift falls into a difference "
            f"between settings (use {plan.starts + 1})"
        ]
    return []
