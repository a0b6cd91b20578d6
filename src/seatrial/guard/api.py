"""``seatrial guard`` as one library call: check the plan, build the target, run the watchdog."""

from __future__ import annotations

from pathlib import Path

from seatrial.errors import ConfigError, GuardError
from seatrial.guard.config import GuardConfig
from seatrial.guard.container import ContainerTarget
from seatrial.guard.history import Echo, History
from seatrial.guard.meminfo import MemInfoReader
from seatrial.guard.outcome import GuardOutcome
from seatrial.guard.preflight import Predictor, check_before_launch
from seatrial.guard.procgroup import ProcessGroupTarget
from seatrial.guard.target import Target
from seatrial.guard.watchdog import Watchdog


def _record_refusal(config: GuardConfig, argv: list[str], reason: str, echo: Echo | None) -> None:
    with MemInfoReader(config.meminfo_path) as reader:
        history = History(config.history, echo)
        try:
            history.record("refuse", reason, reader.sample(), {"kind": "process_group", "command": argv})
        finally:
            history.close()


def run_guard(
    config: GuardConfig,
    command: list[str] | None = None,
    container: str | None = None,
    checkpoint: Path | None = None,
    force: bool = False,
    predictor: Predictor | None = None,
    echo: Echo | None = None,
) -> GuardOutcome:
    """Guard ``command`` (launched in its own process group) or a running ``container``; ``echo``
    receives every history line as it is written."""
    if bool(command) == bool(container):
        raise ConfigError("guard: give either a command after -- or --container NAME (exactly one)")
    preflight = None
    target: Target
    if command:
        target = ProcessGroupTarget(command, config.oom_score_adj)
        try:
            preflight = check_before_launch(command, checkpoint, config.min_available_bytes, predictor, force)
        except GuardError as exc:
            _record_refusal(config, command, str(exc).splitlines()[0], echo)
            raise
    else:
        if checkpoint is not None:
            raise ConfigError("--checkpoint applies to a command launched by the guard, not to --container")
        target = ContainerTarget(str(container), config.oom_score_adj)
    return Watchdog(config, target, preflight, echo).run()
