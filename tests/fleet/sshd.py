"""A throwaway sshd on a loopback address and a free port, with keys made for it, started and stopped by
the tests themselves (by its pid, and its sessions by theirs). The system's real sshd, ssh and rsync: the
ones on PATH (``/usr/sbin/sshd`` first), so that a host without them can bring its own (the wrappers
``ssh-bundle``'s install.sh puts in /usr/local/libexec/sshw; its sessions then need ``remote_path``)."""

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

SYSTEM_SSHD = "/usr/sbin/sshd"


def sshd_path() -> str | None:
    """The sshd to start (an absolute path, as sshd requires): the system's, else the one on PATH."""
    found = SYSTEM_SSHD if os.access(SYSTEM_SSHD, os.X_OK) else shutil.which("sshd")
    return os.path.abspath(found) if found else None


def need_tools() -> None:
    """Skip (in CI: fail) when sshd, ssh or rsync is missing or this is not root (sshd's /run/sshd)."""
    missing = [t for t in ("ssh", "ssh-keygen", "rsync") if shutil.which(t) is None]
    missing += [] if sshd_path() else ["sshd"]
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
        for pid in children(self.proc.pid):  # its sessions
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.proc.terminate()
        self.proc.wait(10)


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (from /proc: no pgrep needed on a bare host)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(d))
    return out


def start_sshd(
    folder: Path, force_command: str | None = None, host: str = "127.0.0.1", remote_path: str | None = None,
    netns: str | None = None, port: int | None = None,
) -> Sshd:  # fmt: skip
    """``remote_path``: the PATH its sessions get (where their ``rsync`` and ``python3`` are found); ``netns``:
    started inside that network namespace (``ip netns exec``), listening on ``host`` there."""
    need_tools()
    sshd = sshd_path() or "sshd"
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    for name in ("hostkey", "clientkey"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    shutil.copy(folder / "clientkey.pub", folder / "authorized_keys")
    port = port or free_port()
    lines = [f"ListenAddress {host}", f"Port {port}", f"HostKey {folder / 'hostkey'}",
             f"AuthorizedKeysFile {folder / 'authorized_keys'}", f"PidFile {folder / 'sshd.pid'}", "StrictModes no",
             "UsePAM no", "PermitRootLogin prohibit-password", "PasswordAuthentication no",
             "KbdInteractiveAuthentication no"]  # fmt: skip
    if force_command:
        lines.append(f"ForceCommand {force_command}")
    if remote_path:
        lines.append(f"SetEnv PATH={remote_path}")
    config = folder / "sshd_config"
    config.write_text("\n".join(lines) + "\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    checked = subprocess.run(
        [sshd, "-T", "-f", str(config)], capture_output=True, text=True, check=True
    ).stdout
    assert f"listenaddress {host}:{port}" in checked, "the test sshd must listen on its one address only"
    log = (folder / "sshd.log").open("wb")
    inside = ["ip", "netns", "exec", netns] if netns else []
    proc = subprocess.Popen([*inside, sshd, "-D", "-e", "-f", str(config)], stderr=log, stdout=log)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((host, port)) == 0 and s.recv(4) == b"SSH-":
                break
        time.sleep(0.02)
    else:
        proc.kill()
        raise RuntimeError(f"the test sshd did not start: {(folder / 'sshd.log').read_text()[-500:]}")
    known = " ".join((folder / "hostkey.pub").read_text().split()[:2])
    (folder / "known_hosts").write_text(f"[{host}]:{port} {known}\n")  # as an operator records it
    ssh = Ssh(port=port, key=folder / "clientkey", known_hosts=folder / "known_hosts")
    return Sshd(host, port, ssh, proc, folder)
