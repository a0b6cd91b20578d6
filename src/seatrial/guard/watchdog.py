"""The guard loop: poll memory, kill the whole server when it crosses the line, restart within budget.

One iteration costs one ``pread`` of ``/proc/meminfo``, one ``waitid`` and a lock read of the health
state; it then sleeps ``poll_ms`` on an event that signals wake at once.
"""

from __future__ import annotations

import time
from typing import Any

from seatrial.errors import GuardError
from seatrial.guard import control
from seatrial.guard.budget import RestartBudget
from seatrial.guard.config import GuardConfig
from seatrial.guard.health import HealthProbe
from seatrial.guard.history import Echo, History, read_history
from seatrial.guard.meminfo import MemInfoReader, MemSample
from seatrial.guard.outcome import Failure, GuardOutcome, StopRequested
from seatrial.guard.procgroup import OOM_SET_FAILED_EXIT
from seatrial.guard.signals import GuardSignals
from seatrial.guard.target import Target
from seatrial.guard.trips import memory_trip, recovered


class Watchdog:
    """Guards one target for one run: launch, poll, kill, restart within budget, record every event."""

    def __init__(
        self,
        config: GuardConfig,
        target: Target,
        preflight: dict[str, Any] | None = None,
        echo: Echo | None = None,
    ) -> None:
        self.config = config
        self.echo = echo
        self.target = target
        self.preflight = preflight
        self.signals = GuardSignals()
        self.counts = {"kill": 0, "restart_automatic": 0, "restart_planned": 0, "health": 0}
        self.consecutive_failures = 0
        self.health = HealthProbe(config.health) if config.health else None
        self._health_state = "starting"

    # -- helpers -----------------------------------------------------------------------------------
    def _record(self, event: str, reason: str, sample: MemSample | None = None, **extra: Any) -> None:
        self.history.record(event, reason, sample or self.reader.sample(), self.target.describe(), **extra)

    def _kill(
        self, event: str, reason: str, sample: MemSample | None = None, graceful: bool = False, **extra: Any
    ) -> None:
        """Stop the whole target and record ``event`` with the target as it was before the kill."""
        snapshot = self.target.describe()
        evidence = self.target.kill(self.config.stop_grace_s if graceful else 0.0, self.config.kill_timeout_s)
        if event == "kill" and not extra.get("planned"):
            self.counts["kill"] += 1
        self.history.record(event, reason, sample or self.reader.sample(), snapshot, **evidence, **extra)

    def _launch(self) -> None:
        self.target.start()
        self.launched_at = time.monotonic()
        if self.health is not None:
            self.health.reset()
            self._health_state = "starting"

    # -- the loop ----------------------------------------------------------------------------------
    def run(self) -> GuardOutcome:
        path = self.config.history
        self.budget = RestartBudget.from_history(
            read_history(path), self.config.restart_budget, self.config.restart_window_s
        )
        control.claim(path)
        self.history = History(path, self.echo)
        self.reader = MemInfoReader(self.config.meminfo_path)
        self.signals.install()
        try:
            return self._guard()
        finally:
            self.signals.restore()
            if self.health is not None:
                self.health.stop()
            if self.target.owned and self.target.describe().get("pid") is not None:
                self.target.kill(0.0, self.config.kill_timeout_s)
            self.reader.close()
            self.history.close()
            control.release(path)

    def _guard(self) -> GuardOutcome:
        first = self.reader.sample()
        self.swap_baseline_bytes = first.swap_used_bytes
        trip = memory_trip(first, self.config, self.swap_baseline_bytes)
        if trip is not None:
            reason = f"not launching: {trip}"
            self._record("refuse", reason, first)
            raise GuardError(f"guard: {reason}")
        self._launch()
        self._record(
            "start",
            "launched",
            first,
            guard=self._settings(),
            plan=self.preflight,
            budget=self.budget.summary(time.time()),
        )
        if self.health is not None:
            self.health.start()
        try:
            while True:
                result = self._poll_once()
                if isinstance(result, GuardOutcome):
                    return result
                if result is not None and (outcome := self._after_failure(result)) is not None:
                    return outcome
        except StopRequested:
            return self._stop()

    def _stop(self) -> GuardOutcome:
        """The guard was asked to stop: it stops the server it launched; a container it only watched
        is left running."""
        if self.target.owned:
            self._kill("stop", "guard asked to stop (SIGTERM/SIGINT): server stopped", graceful=True)
        else:
            self._record("stop", "guard asked to stop (SIGTERM/SIGINT): container left running")
        return self._outcome("stopped", "guard asked to stop", 0)

    def _settings(self) -> dict[str, Any]:
        return self.config.model_dump(
            mode="json",
            include={
                "min_available_gib",
                "max_swap_growth_gib",
                "poll_ms",
                "restart_budget",
                "restart_window_s",
                "restart_margin_gib",
                "oom_score_adj",
            },
        )

    def _poll_once(self) -> Failure | GuardOutcome | None:
        """One poll: a failure to handle, the final outcome, or ``None`` after sleeping one interval."""
        sample = self.reader.sample()
        trip = memory_trip(sample, self.config, self.swap_baseline_bytes)
        if trip is not None:
            self._kill("kill", trip, sample, planned=False)
            return Failure(trip)
        if self.signals.stop_requested:
            raise StopRequested
        if self.signals.restart_requested:
            self._planned_restart()
            return None
        code = self.target.exit_code()
        if code is not None:
            return self._exited(code, sample)
        unhealthy = self._check_health(sample)
        if unhealthy is not None:
            return unhealthy
        self.signals.sleep(self.config.poll_ms / 1000)
        return None

    def _exited(self, code: int, sample: MemSample) -> Failure | GuardOutcome:
        if code == OOM_SET_FAILED_EXIT and self.target.kind == "process_group" and self.target.launches == 1:
            raise GuardError(f"guard: could not set oom_score_adj {self.config.oom_score_adj} on the command")
        reason = f"exited with code {code}"
        self._kill("exit", reason, sample)  # kills leftovers of the group, and reaps
        return self._outcome("exited", reason, 0) if code == 0 else Failure(reason)

    def _check_health(self, sample: MemSample) -> Failure | None:
        if self.health is None:
            return None
        status = self.health.status()
        if status.state != self._health_state:
            self._health_state = status.state
            self.counts["health"] += 1
            self._record("health", status.state, sample, error=status.last_error)
        if not status.failed or status.unhealthy_s < self.config.health.unhealthy_after_s:  # type: ignore[union-attr]
            return None
        reason = f"unhealthy for {status.unhealthy_s:.1f} s ({status.last_error})"
        self._kill("kill", reason, sample, graceful=True, planned=False)
        return Failure(reason)

    def _planned_restart(self) -> None:
        """``seatrial guard restart``: stop gracefully, relaunch once memory allows; no budget spent."""
        self.signals.restart_requested = False
        reason = control.take_request(self.config.history)
        self._kill("kill", f"planned: {reason}", graceful=True, planned=True)
        if not self._wait_recovered():
            raise GuardError("guard: memory did not recover for the planned restart")
        self._launch()
        self.counts["restart_planned"] += 1
        self._record("restart", f"planned: {reason}", planned=True, budget=self.budget.summary(time.time()))

    def _wait_recovered(self) -> bool:
        deadline = time.monotonic() + self.config.recovery_timeout_s
        while not recovered(self.reader.sample(), self.config, self.swap_baseline_bytes):
            if time.monotonic() >= deadline:
                return False
            self.signals.sleep(self.config.poll_ms / 1000)
        return True

    def _after_failure(self, failure: Failure) -> GuardOutcome | None:
        """Restart after a backoff and once memory is back, while the budget allows; else give up."""
        uptime_s = time.monotonic() - self.launched_at
        stable = uptime_s >= self.config.stable_after_s
        self.consecutive_failures = 1 if stable else self.consecutive_failures + 1
        if not self.budget.allows(time.time()):
            return self._give_up(f"restart budget spent ({self._budget_words()}) after: {failure.reason}")
        backoff_s = self.config.backoff_for(self.consecutive_failures)
        self.signals.sleep(backoff_s)
        if not self._wait_recovered():
            return self._give_up(
                f"MemAvailable stayed under the restart line for {self.config.recovery_timeout_s:.0f} s"
            )
        now = time.time()
        self.budget.spend(now)
        self._launch()
        self.counts["restart_automatic"] += 1
        self._record(
            "restart",
            f"after: {failure.reason}",
            planned=False,
            backoff_s=backoff_s,
            consecutive_failures=self.consecutive_failures,
            budget=self.budget.summary(now),
        )
        return None

    def _budget_words(self) -> str:
        return f"{self.config.restart_budget} per {self.config.restart_window_s / 3600:g} h"

    def _give_up(self, reason: str) -> GuardOutcome:
        self._record("give-up", reason, budget=self.budget.summary(time.time()))
        return self._outcome("gave-up", reason, GuardError.exit_code)

    def _outcome(self, outcome: str, reason: str, exit_code: int) -> GuardOutcome:
        return GuardOutcome(
            outcome,
            reason,
            exit_code,
            self.config.history,
            dict(self.counts),
            self.budget.summary(time.time()),
        )
