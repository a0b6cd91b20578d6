"""Reading process identity from ``/proc``: process group, start time, OOM score adjustment, RSS.

A process's identity is its pid together with its start time (field 22 of ``/proc/PID/stat``, in clock
ticks since boot); a pid that was freed and reused by another process has a different start time.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PROC = Path("/proc")
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ProcStat:
    """The fields of ``/proc/PID/stat`` the guard uses."""

    pid: int
    comm: str
    state: str
    pgid: int
    sid: int
    start_ticks: int
    rss_bytes: int


def read_stat(pid: int) -> ProcStat | None:
    """Parse ``/proc/PID/stat``; ``None`` when the process does not exist (any more)."""
    try:
        raw = (PROC / str(pid) / "stat").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return parse_stat(pid, raw)


def parse_stat(pid: int, raw: bytes) -> ProcStat | None:
    """The fields of one ``stat`` file's bytes; None when they are not one."""
    if b")" not in raw:
        return None
    # comm is in parentheses and may itself contain spaces or parentheses: split at the last ')'.
    close = raw.rfind(b")")
    comm = raw[raw.find(b"(") + 1 : close].decode(errors="replace")
    rest = raw[close + 2 :].split()
    # rest[0] is field 3 (state); field n is rest[n - 3].
    return ProcStat(
        pid=pid,
        comm=comm,
        state=rest[0].decode(),
        pgid=int(rest[2]),
        sid=int(rest[3]),
        start_ticks=int(rest[19]),
        rss_bytes=int(rest[21]) * _PAGE_BYTES,
    )


def read_oom_score_adj(pid: int) -> int | None:
    try:
        return int((PROC / str(pid) / "oom_score_adj").read_text().strip())
    except (FileNotFoundError, ProcessLookupError, PermissionError, ValueError):
        return None


def group_members(pgid: int) -> list[ProcStat]:
    """Every live (non-zombie) process whose process group is ``pgid``."""
    members: list[ProcStat] = []
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        stat = read_stat(int(entry.name))
        if stat is not None and stat.pgid == pgid and stat.state != "Z":
            members.append(stat)
    return members


def describe_member(stat: ProcStat) -> dict[str, Any]:
    """A group member as it appears in a history ``kill`` line."""
    fields = asdict(stat)
    fields["oom_score_adj"] = read_oom_score_adj(stat.pid)
    return fields
