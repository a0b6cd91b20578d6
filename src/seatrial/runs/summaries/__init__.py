"""The typed summary of every command (``summary.json``): written by the capability, read back by
:func:`seatrial.runs.stored.read_run` for ``report``, ``compare`` and ``trial``. One module per command;
:data:`BY_COMMAND` names each command's model, :data:`BY_KEY` the second shape a command writes."""

from __future__ import annotations

from importlib import import_module
from typing import Any

from pydantic import ConfigDict

from seatrial.runs.summaries.base import SummaryModel

#: command (run.json's) -> its summary model, ``module:Class`` in this package
BY_COMMAND: dict[str, str] = {
    "bench": "bench:BenchSummary",
    "hw": "hw:HwSummary",
    "accept": "accept:AcceptSummary",
    "capacity": "capacity:CapacitySummary",
    "experiment": "experiment:ExperimentSummary",
    "compare": "compare:CompareSummary",
    "io": "io:IoSummary",
    "sync": "fleet:SyncSummary",
    "doctor": "fleet:DoctorSummary",
    "trial": "trial:TrialSummary",
    "trial-checkpoint": "trial:CheckpointSummary",
}

#: (command, a key only that shape has) -> its model: ``capacity --starts N`` writes the replica's capacity,
#: ``hw --ray`` every node's sheet and the fleet's
BY_KEY: dict[tuple[str, str], str] = {
    ("capacity", "starts"): "capacity:ReplicaCapacity",
    ("hw", "nodes"): "hw:HwFleetSummary",
}

#: pydantic error types that are a version's drift (a field added or dropped since), not a wrong shape
_DRIFT = {"extra_forbidden", "missing"}


def model_for(command: str | None, summary: dict[str, Any]) -> type[SummaryModel] | None:
    """The model ``command`` writes ``summary`` with (None: a command without one)."""
    spec = next((m for (c, key), m in BY_KEY.items() if c == command and key in summary), BY_COMMAND.get(command or ""))
    if spec is None:
        return None
    module, _, name = spec.partition(":")
    model: type[SummaryModel] = getattr(import_module(f"{__name__}.{module}"), name)
    return model


def typed(command: str | None, summary: dict[str, Any]) -> SummaryModel:
    """``summary`` as ``command``'s model. A field another seatrial version added is left out; a value of the wrong
    type or range, or a field this version needs and the file lacks, is a ConfigError (``location: message``).
    A command without a model (a folder without run.json) gives :class:`Untyped`, which no section shows."""
    from pydantic import ValidationError

    from seatrial.errors import ConfigError, errors_message

    model = model_for(command, summary)
    if model is None:
        return Untyped.model_validate(summary)
    try:
        return model.model_validate(summary)
    except ValidationError as exc:
        errors = exc.errors()
    wrong = [e for e in errors if e["type"] not in _DRIFT] or [e for e in errors if e["type"] == "missing"]
    try:
        if not wrong:  # only fields another version added: read it without them
            return model.model_validate(_without(summary, [e["loc"] for e in errors]))
    except (KeyError, IndexError, TypeError):  # a location inside a union's member, not a key of the file
        wrong = errors
    except ValidationError as exc:
        wrong = exc.errors()
    later = " (a field missing: written by another seatrial version?)" if any(e["type"] == "missing" for e in wrong) else ""
    raise ConfigError(errors_message(wrong[:3]) + later)


class Untyped(SummaryModel):
    """The summary of a folder no command's model names (no run.json): kept whole, shown by no section."""

    model_config = ConfigDict(extra="allow")


def _without(data: Any, locations: list[tuple[Any, ...]]) -> Any:
    """``data`` (JSON) with the keys at ``locations`` left out."""
    import copy

    data = copy.deepcopy(data)
    for loc in locations:
        node = data
        for part in loc[:-1]:
            node = node[part]
        node.pop(loc[-1], None)
    return data
