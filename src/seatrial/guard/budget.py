"""The automatic restart budget: at most ``limit`` unplanned restarts in any sliding ``window_s``.

Planned restarts (asked for with ``seatrial guard restart``) are recorded in the history but never spend
the budget. The budget is rebuilt from the history file at start, so it holds across guard runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RestartBudget:
    """Times (unix seconds) of the unplanned restarts that still count against the budget."""

    limit: int
    window_s: float
    spent_at_unix_s: list[float] = field(default_factory=list)

    @classmethod
    def from_history(cls, events: list[dict[str, Any]], limit: int, window_s: float) -> RestartBudget:
        times = [
            float(e["time_unix_s"])
            for e in events
            if e.get("event") == "restart" and e.get("planned") is False
        ]
        return cls(limit=limit, window_s=window_s, spent_at_unix_s=sorted(times))

    def used(self, now_unix_s: float) -> int:
        """Unplanned restarts within the window ending now."""
        start = now_unix_s - self.window_s
        return sum(1 for t in self.spent_at_unix_s if start < t <= now_unix_s)

    def allows(self, now_unix_s: float) -> bool:
        return self.used(now_unix_s) < self.limit

    def spend(self, now_unix_s: float) -> None:
        self.spent_at_unix_s.append(now_unix_s)

    def summary(self, now_unix_s: float) -> dict[str, float | int]:
        return {"budget_used": self.used(now_unix_s), "budget_limit": self.limit, "window_s": self.window_s}
