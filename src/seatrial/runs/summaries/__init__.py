"""The typed summary of every command (``summary.json``): written by the capability, read by ``runs``,
``report`` and ``compare``. One module per command; :data:`BY_COMMAND` names each command's model."""

from __future__ import annotations

from importlib import import_module
from typing import Any

#: command (run.json's) -> its summary model, ``module:Class`` in this package (hw writes a node's sheet or
#: a fleet's, demo a composite: their report sections read their parts themselves)
BY_COMMAND: dict[str, str] = {
    "bench": "bench:BenchSummary",
    "accept": "accept:AcceptSummary",
    "capacity": "capacity:CapacitySummary",
    "experiment": "experiment:ExperimentSummary",
    "compare": "compare:CompareSummary",
    "io": "io:IoSummary",
    "sync": "fleet:SyncSummary",
    "doctor": "fleet:DoctorSummary",
    "trial": "trial:TrialSummary",
}

#: (command, a key only that shape has) -> its model: ``capacity --starts N`` writes the replica's capacity
BY_KEY: dict[tuple[str, str], str] = {("capacity", "starts"): "capacity:ReplicaCapacity"}

#: pydantic error types that are a version's drift (a field added or dropped since), not a wrong shape
_DRIFT = {"extra_forbidden", "missing"}


def shape_errors(command: str | None, summary: dict[str, Any]) -> list[str]:
    """Where ``summary`` is not the shape ``command``'s model writes: a value of the wrong type or range,
    as ``location: message`` (none for a command without a model, and none for fields added or dropped
    between versions)."""
    from pydantic import ValidationError

    spec = next((m for (c, key), m in BY_KEY.items() if c == command and key in summary), BY_COMMAND.get(command or ""))
    if spec is None:
        return []
    module, _, name = spec.partition(":")
    model = getattr(import_module(f"{__name__}.{module}"), name)
    try:
        model.model_validate(summary)
    except ValidationError as exc:
        return [
            f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}"
            for e in exc.errors()
            if e["type"] not in _DRIFT
        ]
    return []
