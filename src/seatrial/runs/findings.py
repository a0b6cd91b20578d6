"""One observation a capability makes about what it was given (a checkpoint, a memory plan): ``code`` is
stable for machines, ``message`` is for people. Audit and plan both report them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["info", "warning", "error"]


@dataclass
class Finding:
    """One observation: ``code`` is stable for machines, ``message`` is for people."""

    code: str
    severity: Severity
    message: str

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        return asdict(self)
