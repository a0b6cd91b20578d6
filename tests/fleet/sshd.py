"""A throwaway sshd on a loopback address and a free port, with keys made for it, started and stopped by
the tests themselves (by its pid, and its sessions by theirs). The system's real sshd, ssh and rsync."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from seatrial.fleet.nodes import Ssh
from seatrial.server.process import free_port

SSHD = "/usr/sbin/sshd"


def need_tools() -> None:
    """Skip (in CI: fail) when sshd, ssh or rsync is missing or this is not root (sshd's /run/sshd)."""
    missing = [t for t in (SSHD, "ssh", "ssh-keygen", "rsync") if shutil.which(t) is None]
    why = (
        f"missing {', '.join(missing)} (scripts/setup.sh installs openssh-server and rsync as root)"
        if missing
        else None
    )
    if why is None and os.geteuid() != 0:
        why = "the throwaway sshd needs root (/run/sshd, a root login on loopback)"
    if why:
        if os.environ.get("SEATRIAL_REQUIRE_SSHD") == "1":
            pytest.fail(why)
        pytest.skip(why)


@dataclass
class Sshd:
    host: str
    port: int
    ssh: Ssh
    proc: subprocess.Popen[bytes]
    folder: Path

    @property
    def target(self) -> str:
        return f"root@{self.host}"

    def flags(self) -> list[str]:
        return [
            "--ssh-port",
            str(self.port),
            "--ssh-key",
            str(self.ssh.key),
            "--known-hosts",
            str(self.ssh.known_hosts),
        ]

    def stop(self) -> None:
        sessions = subprocess.run(
            ["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True
        ).stdout.split()
        for pid in map(int, sessions):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.terminate()
        self.proc.wait(10)


def start_sshd(folder: Path, force_command: str | None = None, host: str = "127.0.0.1") -> Sshd:
    need_tools()
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    for name in ("hostkey", "clientkey"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    shutil.copy(folder / "clientkey.pub", folder / "authorized_keys")
    port = free_port()
    lines = [f"ListenAddress {host}", f"Port {port}", f"HostKey {folder / 'hostkey'}",
             f"AuthorizedKeysFile {folder / 'authorized_keys'}", f"PidFile {folder / 'sshd.pid'}", "StrictModes no",
             "UsePAM no", "PermitRootLogin prohibit-password", "PasswordAuthentication no",
             "KbdInteractiveAuthentication no"]  # fmt: skip
    if force_command:
        lines.append(f"ForceCommand {force_command}")
    config = folder / "sshd_config"
    config.write_text("\n".join(lines) + "\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    checked = subprocess.run(
        [SSHD, "-T", "-f", str(config)], capture_output=True, text=True, check=True
    ).stdout
    assert f"listenaddress {host}:{port}" in checked, "the test sshd must listen on loopback only"
    log = (folder / "sshd.log").open("wb")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=log, stdout=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0 and s.recv(4) == b"SSH-":
                break
        time.sleep(0.02)
    else:
        proc.kill()
        raise RuntimeError(f"the test sshd did not start: {(folder / 'sshd.log').read_text()[-500:]}")
    ssh = Ssh(port=port, key=folder / "clientkey", known_hosts=folder / "known_hosts")
    return Sshd(host, port, ssh, proc, folder)
