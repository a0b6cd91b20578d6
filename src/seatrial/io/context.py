"""What a trial runner gets: the run's settings, each node's scratch folder and the rows measured so far."""

from __future__ import annotations

from dataclasses import dataclass, field

from seatrial.io.models import IoConfig
from seatrial.runs.summaries.io import IoRow


@dataclass
class IoContext:
    cfg: IoConfig
    scratch: dict[str, str] = field(default_factory=dict)  # node spec -> its scratch folder
    rows: list[IoRow] = field(default_factory=list)

    def earlier(self, node: str, trial: str) -> IoRow | None:
        return next((r for r in self.rows if r.node == node and r.trial == trial), None)

    def fio_timeout_s(self, measurements: int = 1) -> float:
        """A generous bound on fio's wall time: its runtime, the layout of its files, start-up."""
        return 120 + measurements * (3 * self.cfg.runtime_s + self.cfg.size_mib * self.cfg.jobs / 50)
