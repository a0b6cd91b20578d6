"""What every summary model shares: unknown fields are refused (a typo in a writer is a bug), and the JSON
is the model's own dump; and what a judged summary adds (:class:`Judged`): what its run's verdicts add up
to (:func:`seatrial.runs.verdicts.verdict_fields`), ``passed``, ``not_measured``, ``counts`` and
``missing_required``, written after the summary's own fields and left out (not null) until the run is
judged (a summary rewritten while trials run, a node that did not answer)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

from seatrial.runs.verdicts import VERDICT_FIELDS, Verdict, verdict_fields

if TYPE_CHECKING:
    from seatrial.runs.result import TrialResult

M = TypeVar("M", bound="SummaryModel")


class SummaryModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_json(self) -> dict[str, Any]:
        """The summary as ``summary.json`` holds it."""
        return self.model_dump(mode="json")

    @classmethod
    def part_of(cls: type[M], summary: dict[str, Any]) -> M:
        """This summary out of a larger one that holds its fields at the top level (the demo's)."""
        return cls.model_validate({k: v for k, v in summary.items() if k in cls.model_fields})


class Distribution(SummaryModel):
    """``{mean, p50, p90, p95, p99, max}`` of a latency over a level's ok requests (None: no value)."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None


class Sparse(SummaryModel):
    """A summary whose JSON leaves the keys in ``omit_if_none`` out when they are None (as it always has),
    and writes the keys in ``last`` after the rest."""

    omit_if_none: ClassVar[frozenset[str]] = frozenset()
    last: ClassVar[tuple[str, ...]] = ()

    @model_serializer(mode="wrap")
    def _sparse(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = {k: v for k, v in handler(self).items() if not (v is None and k in self.omit_if_none)}
        return {k: v for k, v in data.items() if k not in self.last} | {k: data[k] for k in self.last if k in data}


class NotMeasured(Sparse):
    """A trial that was UNAVAILABLE or UNSUPPORTED, with its reason (``node`` only for a node's trial)."""

    omit_if_none = frozenset({"node"})

    name: str
    gpu: int | None
    verdict: Verdict
    reason: str | None
    node: str | None = None


class Judged(Sparse):
    """The verdict fields of a summary (a base: the summary's own fields come first in its JSON)."""

    omit_if_none = frozenset(VERDICT_FIELDS)
    last = VERDICT_FIELDS

    passed: bool | None = None
    not_measured: list[NotMeasured] | None = None
    counts: dict[str, int] | None = None
    missing_required: list[str] | None = None

    def judged(self, trials: Iterable[TrialResult], require: Iterable[str] = ()) -> Self:
        """This summary with what ``trials`` add up to (``require``: trials that must be measured)."""
        return self.model_validate({**dict(self), **verdict_fields(trials, require)})
