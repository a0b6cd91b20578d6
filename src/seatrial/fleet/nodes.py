"""Where ``sync`` and ``doctor`` reach: a local folder or ``[user@]host:path`` over SSH with the system's
``ssh``; and the probe (``probe.py``, standard library only) run there through ``python3 -c BOOT``, the
probe and its arguments on stdin (never on a command line: no length limit, nothing a shell reads).

Host keys are checked strictly: an unknown key is refused (``--accept-new-host-key`` trusts it on first
use and records it), a changed key is refused as "host key changed"; both exit 4."""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seatrial.errors import ConfigError, ServerError

PROBE = Path(__file__).with_name("probe.py")
SSH_UNREACHABLE = (255,)  # ssh's own failure (refused, no route, auth, host key): rsync reports 255 or 12
IN_PROCESS = ("manifest", "space", "clean", "write", "prepare")  # stdlib alone: python3 -S there
#: what the remote (or local) interpreter runs: the probe's length, the probe, then its JSON arguments, on stdin
BOOT = "import sys;n=int(sys.stdin.buffer.readline());exec(compile(sys.stdin.buffer.read(n),'seatrial-probe','exec'))"
UNKNOWN_KEY = ("host key is known", "No matching host key", "Host key verification failed")
CHANGED_KEY = ("HOST IDENTIFICATION HAS CHANGED", "has changed and you have requested strict checking")


@dataclass(frozen=True)
class Ssh:
    """How to reach SSH hosts: the system's ``ssh`` with these options (batch mode: never a prompt)."""

    port: int | None = None
    key: Path | None = None
    known_hosts: Path | None = None
    connect_timeout_s: int = 10
    cipher: str | None = "aes128-gcm@openssh.com,chacha20-poly1305@openssh.com,aes256-gcm@openssh.com"
    control_dir: Path | None = None  # probe calls share one connection per host there (not the streams)
    accept_new_host_key: bool = False  # trust an unknown host key on first use (and record it)

    def multiplexed(self) -> list[str]:
        """``argv()`` for short calls: one master connection per host, kept 60 s (closed by ``close``)."""
        if self.control_dir is None:
            return self.argv()
        return [*self.argv(), "-o", "ControlMaster=auto", "-o", f"ControlPath={self.control_dir}/%C",
                "-o", "ControlPersist=60"]  # fmt: skip

    def close(self, hosts: list[str]) -> None:
        """End the master connections of ``hosts`` (``ssh -O exit``)."""
        if self.control_dir is None:
            return
        for host in hosts:
            subprocess.run(
                [*self.multiplexed(), "-O", "exit", "--", host], capture_output=True, timeout=10, check=False
            )

    def argv(self) -> list[str]:
        """ssh for a bulk stream too: no compression, no tty, no forwarding, a fast AEAD cipher."""
        strict = "accept-new" if self.accept_new_host_key else "yes"
        out = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout_s}",
               "-o", "ServerAliveInterval=15", "-o", "LogLevel=ERROR", "-o", f"StrictHostKeyChecking={strict}",
               "-o", "Compression=no", "-T", "-x", "-a"]  # fmt: skip
        if self.port:
            out += ["-p", str(self.port)]
        if self.key:
            out += ["-i", str(self.key)]
        if self.known_hosts:
            out += ["-o", f"UserKnownHostsFile={self.known_hosts}"]
        if self.cipher:
            out += ["-c", self.cipher]
        return out


@dataclass(frozen=True)
class Place:
    """A local folder (``host`` None) or a folder on an SSH host (``[user@]host``)."""

    host: str | None
    path: str
    spec: str = field(compare=False, default="")

    @property
    def local(self) -> bool:
        return self.host is None

    def __str__(self) -> str:
        return self.spec or (self.path if self.local else f"{self.host}:{self.path}")

    def rsync_target(self) -> str:
        return f"{self.path.rstrip('/')}/" if self.local else f"{self.host}:{self.path.rstrip('/')}/"


def parse_place(spec: str) -> Place:
    """``/models/x`` or ``local:/models/x`` (here), ``[user@]host:/models/x`` (SSH). An empty path and a
    host that starts with ``-`` (ssh would read it as an option) are refused."""
    host, colon, path = spec.partition(":")
    if not colon or "/" in host or host == "":
        place = Place(None, spec, spec)
    elif host == "local":
        place = Place(None, path, spec)
    else:
        place = Place(host, path, spec)
    if not place.path.strip():
        raise ConfigError(f"{spec!r}: give a folder (a path, local:PATH or [user@]host:PATH)")
    check_host(place.host)
    return place


def check_host(host: str | None) -> None:
    """ConfigError for a host ssh would take for an option (``-oProxyCommand=...``)."""
    if host is not None and (host.startswith("-") or host.partition("@")[2].startswith("-")):
        raise ConfigError(f"{host!r}: a host cannot start with '-'")


def ssh_failure(place: object, err: list[str]) -> str:
    """What ssh's stderr says, in words: a changed or unknown host key, or the node cannot be reached."""
    text = "\n".join(err)
    if any(n in text for n in CHANGED_KEY):
        return (f"{place}: host key changed (ssh refuses it: someone may be intercepting, or the node was "
                "reinstalled; check, then remove the old key with ssh-keygen -R HOST)")  # fmt: skip
    if any(n in text for n in UNKNOWN_KEY):
        return (f"{place}: the host key is not known (nothing was written to known_hosts); pass "
                "--accept-new-host-key to trust it on first use")  # fmt: skip
    last = next((line for line in reversed(err) if line.strip()), "exit 255")
    return f"{place}: cannot be reached over SSH: {last.strip()}"


def run_probe(
    place: Place, args: dict[str, Any], ssh: Ssh, python: str = "python3", timeout_s: float = 3600
) -> Any:
    """The probe's JSON answer from ``place``; ServerError (exit 4) when the node cannot be reached."""
    if place.local and python == "python3" and args["action"] in IN_PROCESS:
        from seatrial.fleet import probe

        return probe.run(args)  # the same code as on a node, without a new interpreter
    source = PROBE.read_bytes()
    stdin = b"%d\n" % len(source) + source + json.dumps(args).encode()
    # -S: no site-packages to scan (a large serving venv costs a start 0.1 s and more), except where the
    # probe reads package versions
    flags = ["-S", "-c"] if args["action"] in IN_PROCESS else ["-c"]
    if place.local:
        argv = [python, *flags, BOOT]
    else:
        check_host(place.host)
        command = shlex.join([python, *flags, BOOT])
        argv = [*ssh.multiplexed(), "--", place.host or "", command]
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, timeout=timeout_s, check=False)
    except FileNotFoundError as exc:
        raise ServerError(f"{place}: cannot run {argv[0]!r}: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise ServerError(f"{place}: the probe did not answer in {timeout_s:.0f} s") from None
    err = done.stderr.decode(errors="replace").strip().splitlines()
    if done.returncode in SSH_UNREACHABLE and not place.local:
        raise ServerError(ssh_failure(place, err))
    if done.returncode != 0:
        raise ServerError(f"{place}: the probe failed (exit {done.returncode}): {err[-1] if err else ''}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise ServerError(f"{place}: the probe answered no JSON: {done.stdout[:200]!r}") from None
