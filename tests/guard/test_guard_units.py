"""Pure pieces of the guard: /proc/meminfo parsing, durations, backoff, the restart budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from seatrial.errors import ConfigError, GuardError
from seatrial.guard import GuardConfig, MemInfoReader, RestartBudget, parse_duration_s
from seatrial.guard.meminfo import parse_meminfo
from seatrial.guard.trips import memory_trip, recovered

MEMINFO = b"""MemTotal:       24684092 kB
MemFree:        14837300 kB
MemAvailable:   12582912 kB
SwapCached:            0 kB
SwapTotal:      16777216 kB
SwapFree:       10485760 kB
"""


def test_parse_meminfo_converts_kb_to_bytes() -> None:
    sample = parse_meminfo(MEMINFO)
    assert sample.mem_available_bytes == 12582912 * 1024  # exactly 12 GiB
    assert sample.swap_used_bytes == (16777216 - 10485760) * 1024  # 6 GiB
    assert sample.as_fields()["mem_available_gib"] == 12.0
    assert sample.as_fields()["swap_used_gib"] == 6.0


def test_parse_meminfo_names_the_file_and_field_when_malformed() -> None:
    with pytest.raises(GuardError, match=r"/x/meminfo: no SwapFree line"):
        parse_meminfo(MEMINFO.replace(b"SwapFree", b"SwapGone"), Path("/x/meminfo"))


def test_reader_agrees_with_proc_meminfo() -> None:
    with MemInfoReader() as reader:
        first = reader.sample()
        second = reader.sample()  # the same descriptor is re-read, not reopened
    text = Path("/proc/meminfo").read_text()
    total_kb = int(next(x for x in text.splitlines() if x.startswith("MemTotal:")).split()[1])
    assert 0 < first.mem_available_bytes <= total_kb * 1024
    assert abs(second.mem_available_bytes - first.mem_available_bytes) < total_kb * 1024 // 4
    assert second.time_unix_s >= first.time_unix_s


def test_trips_at_the_line_and_on_swap_growth_past_baseline() -> None:
    config = GuardConfig(min_available_gib=12, max_swap_growth_gib=2, restart_margin_gib=1)
    sample = parse_meminfo(MEMINFO)  # 12 GiB available, 6 GiB swap used
    assert memory_trip(sample, config, swap_baseline_bytes=5 * 1024**3) is None  # grew 1 GiB
    assert "swap grew 3.00 GiB" in str(memory_trip(sample, config, swap_baseline_bytes=3 * 1024**3))
    lower = parse_meminfo(MEMINFO.replace(b"12582912", b"12582908"))  # 4 kB under the line
    assert memory_trip(lower, config, 6 * 1024**3) == "MemAvailable 12.00 GiB fell under the 12.00 GiB line"
    assert not recovered(sample, config, 6 * 1024**3)  # needs 13 GiB


def test_parse_duration_and_errors_name_the_flag() -> None:
    assert parse_duration_s("6h", "--restart-window") == 21600
    assert parse_duration_s("90", "--x") == 90
    assert parse_duration_s("250ms", "--x") == 0.25
    with pytest.raises(ConfigError, match="--restart-window: 'six hours'"):
        parse_duration_s("six hours", "--restart-window")


def test_backoff_doubles_and_caps() -> None:
    config = GuardConfig(backoff_s=5, backoff_max_s=30)
    assert [config.backoff_for(n) for n in range(6)] == [0, 5, 10, 20, 30, 30]


def test_budget_counts_only_unplanned_restarts_inside_the_window() -> None:
    now = 100_000.0
    events = [
        {"event": "restart", "planned": False, "time_unix_s": now - 7 * 3600},  # outside 6 h
        {"event": "restart", "planned": False, "time_unix_s": now - 3600},
        {"event": "restart", "planned": True, "time_unix_s": now - 1800},  # planned: free
        {"event": "kill", "planned": False, "time_unix_s": now - 1700},
    ]
    budget = RestartBudget.from_history(events, limit=2, window_s=6 * 3600)
    assert budget.used(now) == 1 and budget.allows(now)
    budget.spend(now)
    assert budget.used(now) == 2 and not budget.allows(now)
    assert budget.allows(now + 6 * 3600)  # both have left the window by then
