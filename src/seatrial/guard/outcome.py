"""How a guard run ends, and the two internal signals of the loop (a failure, a stop request)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class GuardOutcome:
    """How a guard run ended. ``outcome`` is ``exited`` (the server exited 0 by itself), ``gave-up``
    (a failure with no budget left, or memory that never came back) or ``stopped`` (the guard was
    asked to stop). ``exit_code`` is the guard's own exit status."""

    outcome: str
    reason: str
    exit_code: int
    history: Path
    counts: dict[str, int] = field(default_factory=dict)
    budget: dict[str, float | int] = field(default_factory=dict)


@dataclass(frozen=True)
class Failure:
    """The guarded server failed (killed on memory, crashed, or unhealthy) for ``reason``."""

    reason: str


class StopRequested(Exception):
    """Raised inside the loop when the guard itself was asked to stop (SIGTERM / SIGINT)."""
