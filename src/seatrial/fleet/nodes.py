"""Where ``sync`` and ``doctor`` reach: a local folder or ``[user@]host:path`` over SSH with the system's
``ssh``; and the probe (``probe.py``, standard library only) run there through ``python3 -``."""

from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seatrial.errors import ConfigError, ServerError

PROBE = Path(__file__).with_name("probe.py")
SSH_UNREACHABLE = (255,)
IN_PROCESS = (
    "manifest",
    "space",
    "clean",
    "write",
    "prepare",
)  # ssh's own failure (refused, no route, auth): rsync reports 255 or 12


@dataclass(frozen=True)
class Ssh:
    """How to reach SSH hosts: the system's ``ssh`` with these options (batch mode: never a prompt)."""

    port: int | None = None
    key: Path | None = None
    known_hosts: Path | None = None
    connect_timeout_s: int = 10
    cipher: str | None = "aes128-gcm@openssh.com,chacha20-poly1305@openssh.com,aes256-gcm@openssh.com"
    control_dir: Path | None = None  # probe calls share one connection per host there (not the streams)

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
                [*self.multiplexed(), "-O", "exit", host], capture_output=True, timeout=10, check=False
            )

    def argv(self) -> list[str]:
        out = ["ssh", "-o", "BatchMode=yes", "-o", f"ConnectTimeout={self.connect_timeout_s}",
               "-o", "ServerAliveInterval=15", "-o", "LogLevel=ERROR", "-o", "StrictHostKeyChecking=accept-new"]  # fmt: skip
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
    """``/models/x`` or ``local:/models/x`` (here), ``[user@]host:/models/x`` (SSH)."""
    host, colon, path = spec.partition(":")
    if not colon or "/" in host or host == "":
        return Place(None, spec, spec)
    if host == "local":
        return Place(None, path, spec)
    if not path:
        raise ConfigError(f"{spec}: give a path after the colon ([user@]host:/path)")
    return Place(host, path, spec)


def run_probe(
    place: Place, args: dict[str, Any], ssh: Ssh, python: str = "python3", timeout_s: float = 3600
) -> Any:
    """The probe's JSON answer from ``place``; ServerError (exit 4) when the node cannot be reached."""
    if place.local and python == "python3" and args["action"] in IN_PROCESS:
        from seatrial.fleet import probe

        return probe.ACTIONS[args["action"]](args)  # the same code as on a node, without a new interpreter
    payload = json.dumps(args)
    if place.local:
        argv = [python, "-", payload]
    else:
        argv = [*ssh.multiplexed(), place.host or "", f"{shlex.quote(python)} - {shlex.quote(payload)}"]
    try:
        done = subprocess.run(
            argv, input=PROBE.read_bytes(), capture_output=True, timeout=timeout_s, check=False
        )
    except FileNotFoundError as exc:
        raise ServerError(f"{place}: cannot run {argv[0]!r}: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise ServerError(f"{place}: the probe did not answer in {timeout_s:.0f} s") from None
    err = done.stderr.decode(errors="replace").strip().splitlines()
    if done.returncode in SSH_UNREACHABLE and not place.local:
        raise ServerError(f"{place}: cannot be reached over SSH: {err[-1] if err else 'exit 255'}")
    if done.returncode != 0:
        raise ServerError(f"{place}: the probe failed (exit {done.returncode}): {err[-1] if err else ''}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise ServerError(f"{place}: the probe answered no JSON: {done.stdout[:200]!r}") from None
