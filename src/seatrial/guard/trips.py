"""The two memory conditions that make the guard kill: the MemAvailable line and swap growth.

``swap growth`` is swap used now minus swap used when the guard started, so swap that other programs
had already pushed out before the launch does not count against the server.
"""

from __future__ import annotations

from seatrial.guard.config import GuardConfig
from seatrial.guard.meminfo import GIB, MemSample


def memory_trip(sample: MemSample, config: GuardConfig, swap_baseline_bytes: int) -> str | None:
    """Why this sample must kill the guarded server, or ``None`` when it is safe."""
    if sample.mem_available_bytes < config.min_available_bytes:
        return (
            f"MemAvailable {sample.mem_available_bytes / GIB:.2f} GiB fell under the "
            f"{config.min_available_gib:.2f} GiB line"
        )
    growth_bytes = sample.swap_used_bytes - swap_baseline_bytes
    if growth_bytes > config.max_swap_growth_bytes:
        return f"swap grew {growth_bytes / GIB:.2f} GiB, past the {config.max_swap_growth_gib:.2f} GiB limit"
    return None


def recovered(sample: MemSample, config: GuardConfig, swap_baseline_bytes: int) -> bool:
    """True once MemAvailable is back above the line plus the restart margin and swap is within limit."""
    return (
        sample.mem_available_bytes >= config.restart_line_bytes
        and memory_trip(sample, config, swap_baseline_bytes) is None
    )
