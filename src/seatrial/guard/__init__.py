"""The launch guard: sacrifice the server, not the host.

Launches a server in its own process group (or watches a container), polls host memory, kills the
whole server when MemAvailable falls under the protection line or swap grows past its limit, restarts
it within a budget, and writes one JSON history line per event.
"""

from seatrial.guard.api import run_guard
from seatrial.guard.budget import RestartBudget
from seatrial.guard.config import GuardConfig, HealthConfig, parse_duration_s
from seatrial.guard.control import request_planned_restart
from seatrial.guard.history import read_history
from seatrial.guard.launch import LaunchSpec, parse_vllm_command
from seatrial.guard.meminfo import MemInfoReader, MemSample
from seatrial.guard.outcome import GuardOutcome
from seatrial.guard.preflight import LaunchFit, Predictor, check_before_launch, default_predictor

__all__ = [
    "GuardConfig",
    "GuardOutcome",
    "HealthConfig",
    "LaunchFit",
    "LaunchSpec",
    "MemInfoReader",
    "MemSample",
    "Predictor",
    "RestartBudget",
    "check_before_launch",
    "default_predictor",
    "parse_duration_s",
    "parse_vllm_command",
    "read_history",
    "request_planned_restart",
    "run_guard",
]
