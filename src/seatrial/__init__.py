"""seatrial: sea trials for LLM inference deployments.

Audit a checkpoint, plan GPU memory, convert what does not fit, guard the launch, prove the GPUs,
and load-test the running server with statistically honest acceptance trials that end in verdicts.
"""

from seatrial.errors import (
    CheckpointError,
    ConfigError,
    EngineError,
    GuardError,
    HardwareError,
    RunInterrupted,
    SeatrialError,
    ServerError,
)
from seatrial.runs.verdicts import Verdict

__version__ = "0.1.0"

__all__ = [
    "CheckpointError",
    "ConfigError",
    "EngineError",
    "GuardError",
    "HardwareError",
    "RunInterrupted",
    "SeatrialError",
    "ServerError",
    "Verdict",
    "__version__",
]
