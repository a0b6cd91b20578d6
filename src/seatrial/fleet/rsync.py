"""The transport of ``seatrial sync``: the system's ``rsync`` (over ``ssh`` for a remote destination),
several processes at once, each with its own file list, their progress read as they go.

Each stream: ``rsync -a -s --files-from LIST --partial-dir=.rsync-partial --mkpath -W -- SRC/ DEST/``
(``-H`` where its files share inodes, ``-S`` where they are sparse), so that an interrupted file waits in
``.rsync-partial`` and never lies under its final name. ``-W`` (whole files: no rolling checksums on
either end, which only pay on a slow link) unless a file of the stream has partial data from an
interrupted run: that stream goes without it, so rsync continues from the partial; a stream that fails
is tried once more without ``-W`` for the same reason. ``-s`` sends the paths inside rsync's protocol,
never through the remote shell (``RSYNC_OLD_ARGS`` is cleared so it cannot turn that off). Ctrl-C,
SIGTERM and SIGHUP stop every stream (their process groups, the ssh under each too); the next run
continues where they were.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from seatrial.childenv import child_environ
from seatrial.fleet.nodes import Place, Ssh
from seatrial.interrupts import shielded

PROGRESS = re.compile(rb"^\s*(\d+)\s+(\d+)%\s+(\S+)\s+(\d+:\d\d:\d\d)")
STATS = {"sent_bytes": re.compile(rb"^Total bytes sent: ([\d,]+)"),
         "literal_bytes": re.compile(rb"^Literal data: ([\d,]+)")}  # fmt: skip
UNREACHABLE_RC = (
    255,
    12,
)  # ssh's own failure; rsync's "error in rsync protocol data stream" (a dropped link)
GONE_RC = (*UNREACHABLE_RC, 30, 35)  # ... and rsync's I/O timeouts: the node is not answering
#: what rsync's (or ssh's) stderr says, in words; the first that matches names the error
ERRORS = (
    ("has changed and you have requested strict checking", "host key changed"),
    ("host key is known", "the host key is not known; pass --accept-new-host-key to trust it on first use"),
    ("No space left on device", "disk full"),
    ("Permission denied", "permission denied"),
    ("Read-only file system", "read-only file system"),
    ("Connection refused", "connection refused"),
    ("Could not resolve hostname", "unknown host"),
    ("Connection timed out", "connection timed out"),
)
UNREACHABLE_WORDS = ("host key", "connection refused", "unknown host", "connection timed out")


@dataclass
class Stream:
    name: str
    files: list[str]
    total_bytes: int
    hardlinks: bool = False
    sparse: bool = False
    done_bytes: int = 0
    started: float = 0.0
    finished: float | None = None
    rc: int | None = None
    error: str | None = None
    attempts: int = 0
    stderr: list[str] = field(default_factory=list)
    resume: bool = False  # a file of it has partial data from an interrupted run: no -W, continue from it
    ignore_times: bool = False  # send even where size and time agree (a file verification found different)
    sent_bytes: int | None = None  # on the wire, rsync's --stats ("Total bytes sent")
    literal_bytes: int | None = None  # file data sent as data, not matched from a basis (partial) file

    @property
    def mb_s(self) -> float | None:
        end = self.finished or time.monotonic()
        return self.done_bytes / 1e6 / (end - self.started) if self.started and end > self.started else None


def unreachable(stream: Stream) -> bool:
    """The stream failed because the node could not be reached or the connection dropped."""
    err = (stream.error or "").lower()
    return stream.rc in GONE_RC or any(w in err for w in UNREACHABLE_WORDS)


def classify(stderr: list[str], rc: int) -> str:
    text = "\n".join(stderr)
    for needle, words in ERRORS:
        if needle in text:
            return words
    if rc in GONE_RC:
        return "cannot be reached (the connection failed or dropped)"
    last = next((line for line in reversed(stderr) if line.strip()), "")
    return f"rsync exit {rc}: {last.strip()}"


class Transfer:
    """Runs ``streams`` from ``src`` to ``dest``; ``on_progress`` gets every stream about twice a second."""

    def __init__(
        self,
        src: Path,
        dest: Place,
        ssh: Ssh,
        on_progress: Callable[[list[Stream]], None] | None = None,
        bwlimit_mb_s: float | None = None,
    ) -> None:
        self.src, self.dest, self.ssh, self.bwlimit_mb_s = src, dest, ssh, bwlimit_mb_s
        self.on_progress = on_progress or (lambda streams: None)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()

    def argv(self, stream: Stream, file_list: Path, whole_file: bool) -> list[str]:
        argv = ["rsync", "-a", "-s", "--from0", f"--files-from={file_list}", "--no-inc-recursive",
                "--partial-dir=.rsync-partial", "--mkpath", "--info=progress2", "--no-h", "--stats",
                "--out-format=XFER %i %l %n"]  # fmt: skip
        argv += ["-W"] if whole_file else []
        argv += ["-H"] if stream.hardlinks else []
        argv += ["-S"] if stream.sparse else []
        argv += ["--ignore-times"] if stream.ignore_times else []
        if self.bwlimit_mb_s:
            argv.append(f"--bwlimit={max(1, round(self.bwlimit_mb_s * 1000))}")
        if not self.dest.local:
            argv += ["-e", shlex.join(self.ssh.argv())]
        return [*argv, "--", f"{self.src}/", self.dest.rsync_target()]

    def run(self, streams: list[Stream]) -> list[Stream]:
        """Every stream at once (one thread each); returns them with rc and error set."""
        threads = [threading.Thread(target=self._one, args=(s,), daemon=True) for s in streams]
        for t in threads:
            t.start()
        try:
            while any(t.is_alive() for t in threads):
                self.on_progress(streams)
                for t in threads:
                    t.join(0.5)
        except BaseException:  # Ctrl-C, or SIGTERM / SIGHUP turned into one: no rsync outlives this
            with shielded():
                self.stop()
            raise
        self.on_progress(streams)
        return streams

    def _one(self, stream: Stream) -> None:
        with tempfile.TemporaryDirectory(prefix="seatrial-sync-") as tmp:
            file_list = Path(tmp) / "files"
            file_list.write_bytes(b"\0".join(os.fsencode(f) for f in stream.files) + b"\0")
            for whole_file in (not stream.resume, False):  # once more without -W: resume from the partial
                stream.attempts += 1
                self._attempt(stream, self.argv(stream, file_list, whole_file))
                if stream.rc == 0 or stream.rc in UNREACHABLE_RC or stream.rc == -signal.SIGTERM:
                    break
        stream.error = None if stream.rc == 0 else classify(stream.stderr, stream.rc or -1)

    def _attempt(self, stream: Stream, argv: list[str]) -> None:
        stream.started, stream.stderr = time.monotonic(), []
        env = {k: v for k, v in child_environ().items() if k not in ("RSYNC_OLD_ARGS", "RSYNC_PROTECT_ARGS")}
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)  # fmt: skip
        with self._lock:
            self._procs[stream.name] = proc
        reader = threading.Thread(target=self._stderr, args=(proc, stream), daemon=True)
        reader.start()
        assert proc.stdout is not None
        buf = b""
        while chunk := os.read(proc.stdout.fileno(), 65536):
            buf += chunk
            *lines, buf = re.split(rb"[\r\n]", buf)
            for line in lines:
                if m := PROGRESS.match(line):
                    stream.done_bytes = int(m.group(1))
                for name, pattern in STATS.items():
                    if m := pattern.match(line):
                        setattr(stream, name, int(m.group(1).replace(b",", b"")))
        stream.rc = proc.wait()
        reader.join()
        if stream.rc == 0:
            stream.done_bytes = stream.total_bytes
            stream.finished = time.monotonic()

    @staticmethod
    def _stderr(proc: subprocess.Popen[bytes], stream: Stream) -> None:
        assert proc.stderr is not None
        stream.stderr += proc.stderr.read().decode(errors="replace").splitlines()[-20:]

    def stop(self) -> None:
        """SIGTERM every rsync (its process group: the ssh under it too), then SIGKILL what is left."""
        with self._lock:
            procs = list(self._procs.values())
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
