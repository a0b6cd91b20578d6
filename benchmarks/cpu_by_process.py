"""Where a command's CPU time goes, by kind of process: the vLLM engines, seatrial's own CLI processes, the
pytest processes (the tests, the CLI they run in-process, their load workers), Ray, Chromium, ssh/rsync.

Two sources, both the kernel's own counts:
- BSD process accounting (``acct(2)``, root only): one record per process as it exits, with its user and
  system CPU over all its threads (in 1/100 s), its pid, parent pid, start time and command name;
- a sampler reading every live process (psutil) every ``period_s``: the command line of every process alive then, which
  names its kind; a process that lived less than a period, or whose command line names no kind (a test's
  synthetic server, a memory hog), is given its parent's kind.

Processes that started during the measurement and still run at its end are counted as they are then and
named as left running. What no record covers (the kernel's own threads, interrupts, processes that
started before) is left as the difference to the machine's busy time. Used by ``suite_cpu.py``; the
accounting file is a temporary file, removed at the end, and accounting is switched off on every exit.
"""

from __future__ import annotations

import ctypes
import os
import resource
import struct
import tempfile
import threading
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import psutil

AHZ = 100  # acct(5): times in 1/100 s
ACCT_V3 = struct.Struct("<ccHIIIIIIf8H16s")  # linux/acct.h, struct acct_v3: 64 bytes
ENGINE_VENV = os.environ.get("SEATRIAL_ENGINE_VENV", str(Path.home() / ".cache/seatrial/engine-venv"))


def kind(argv: list[str]) -> str:
    """The kind of a process, by its command line."""
    head = " ".join(argv[:4])
    if argv[0].startswith(ENGINE_VENV) or "VLLM" in argv[0] or "vllm.entrypoints" in head:
        return "vLLM engines (engine venv)"
    if any(a == "seatrial" or a.endswith("/bin/seatrial") for a in argv[:2]) or (
        argv[1:2] == ["-m"] and argv[2:3] and argv[2].split(".")[0] == "seatrial"
    ):
        return "seatrial CLI (own processes)"
    if "pytest" in head or "xdist" in head or "sys.stdin.readline" in head:  # an xdist worker runs execnet's loop
        return "pytest (tests, in-process CLI, load workers)"
    if "ray" in head.lower() or argv[0].endswith(("raylet", "gcs_server")):
        return "Ray"
    if "chrom" in argv[0]:
        return "Chromium"
    if os.path.basename(argv[0]) in ("sshd", "ssh", "rsync") or argv[0].startswith("sshd"):
        return "ssh/rsync"
    return "other"


def kind_by_name(comm: str) -> str:
    """The kind of a process seen only in its accounting record, by its command name (15 characters)."""
    named = kind([comm, comm, ""])
    if named == "other" and comm.startswith(("kworker", "ksoftirq", "rcu_", "migration")):
        return "kernel threads"
    return f"other (short-lived {comm})" if named == "other" else named


def comp_t(v: int) -> int:
    """acct(5)'s comp_t: a 13-bit mantissa and a 3-bit base-8 exponent."""
    return (v & 0x1FFF) << (3 * (v >> 13))


class Sampler(threading.Thread):
    """Every ``period_s``: each process's kind (by command line) and CPU seconds, keyed by (pid, start)."""

    def __init__(self, period_s: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.period_s, self.done = period_s, threading.Event()
        self.kinds: dict[tuple[int, float], str] = {}
        self.by_pid: dict[int, list[tuple[float, str]]] = defaultdict(list)
        self.before = self.scan(record=False)

    def scan(self, record: bool = True) -> dict[tuple[int, float], float]:
        """CPU seconds of every live process now (all its threads), recording the kind of each new one."""
        seen = {}
        for proc in psutil.process_iter(["ppid", "create_time", "cpu_times", "cmdline"]):
            info = proc.info
            if info["create_time"] is None or info["cpu_times"] is None:
                continue  # gone while read
            key = (proc.pid, info["create_time"])
            seen[key] = info["cpu_times"].user + info["cpu_times"].system
            if record and key not in self.kinds and info["cmdline"]:  # kernel threads have none
                own, parent = kind(info["cmdline"]), self.parent_kind(info["ppid"], key[1])
                self.kinds[key] = parent if own == "other" and parent else own  # a test's helper is the test's
                self.by_pid[proc.pid].append((key[1], self.kinds[key]))
        return seen

    def run(self) -> None:
        while not self.done.wait(self.period_s):
            self.scan()

    def kind_of(self, pid: int, start: float, ppid: int) -> str | None:
        """The kind seen for this process (start within a second, as acct rounds it), else its parent's."""
        own = [k for s, k in self.by_pid.get(pid, ()) if abs(s - start) < 1.5]
        return own[-1] if own else self.parent_kind(ppid, start)

    def parent_kind(self, ppid: int, start: float) -> str | None:
        """The kind of the latest process seen with pid ``ppid`` that started before ``start``."""
        found = [k for s, k in self.by_pid.get(ppid, ()) if s <= start + 1.5]
        return found[-1] if found else None


def records(path: Path) -> Iterator[tuple[int, int, float, float, str]]:
    """(pid, parent pid, start, CPU seconds, command name) of every process accounting recorded."""
    data = path.read_bytes()
    for off in range(0, len(data) - ACCT_V3.size + 1, ACCT_V3.size):
        r = ACCT_V3.unpack_from(data, off)
        if r[1] == b"\x03":
            cpu = (comp_t(r[10]) + comp_t(r[11])) / AHZ
            yield r[6], r[7], float(r[8]), cpu, r[-1].rstrip(b"\0").decode(errors="replace")


def self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class ByProcess:
    """``with ByProcess() as split: ...`` then ``split.totals``: CPU seconds by kind of process, or
    ``split.unavailable`` saying why not (process accounting needs root)."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = defaultdict(float)
        self.unavailable: str | None = None
        self.libc = ctypes.CDLL(None, use_errno=True)

    def __enter__(self) -> ByProcess:
        fd, name = tempfile.mkstemp(prefix="seatrial-acct-")
        os.close(fd)
        self.file = Path(name)
        if self.libc.acct(str(self.file).encode()) != 0:
            self.unavailable = f"process accounting (acct(2)) refused: {os.strerror(ctypes.get_errno())}"
            return self
        self.sampler = Sampler()
        self.sampler.start()
        self.own0 = self_cpu_s()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.unavailable is None:
            self.sampler.done.set()
            self.sampler.join()
            self.libc.acct(None)
            self.count()
            self.totals["this benchmark (its /proc sampler)"] += self_cpu_s() - self.own0
        self.file.unlink(missing_ok=True)

    def count(self) -> None:
        before = defaultdict(list)
        for (pid, start), cpu_s in self.sampler.before.items():
            before[pid].append((start, cpu_s))
        for pid, ppid, start, cpu, comm in records(self.file):
            spent = cpu - sum(c for s, c in before.get(pid, ()) if abs(s - start) < 1.5)  # only what it spent since
            self.totals[self.sampler.kind_of(pid, start, ppid) or kind_by_name(comm)] += spent
        for key, cpu_s in self.sampler.scan().items():  # still running: started during, or before
            if key in self.sampler.kinds and key not in self.sampler.before:
                self.totals[f"{self.sampler.kinds[key]}, left running"] += cpu_s


def table(totals: dict[str, float], busy_s: float, top: int = 8) -> list[str]:
    """Rows of kind, CPU seconds and share of the machine's busy time, the rest folded into one."""
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    shown, rest = ranked[:top], sum(v for _, v in ranked[top:])
    rows = [f"  {k:<48} {v:>8.0f} {v / busy_s:>6.0%}" for k, v in shown]
    if rest:
        rows.append(f"  {'(the rest, ' + str(len(ranked) - top) + ' kinds)':<48} {rest:>8.0f} {rest / busy_s:>6.0%}")
    gap = busy_s - sum(totals.values())
    rows.append(f"  {'not in any record (kernel, irq, older processes)':<48} {gap:>8.0f} {gap / busy_s:>6.0%}")
    return rows
