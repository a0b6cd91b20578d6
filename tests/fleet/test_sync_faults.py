"""Issue 21: ``seatrial sync`` under hostile input and faults, over the real rsync and ssh and a throwaway
loopback sshd: nothing deleted that sync did not create, no DEST string that runs a command, arguments
that never reach argv, strict host keys, verdicts that say what they compared, a manifest written only
for an identical DEST, resume from partial data, signals that stop every rsync, exit codes as the
README's table says."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file
from tests.clirun import ctrl_c_reaches, invoke
from tests.fleet.conftest import write_checkpoint
from tests.fleet.sshd import Sshd, start_sshd
from tests.fleet.test_sync import sync, tree

from seatrial.fleet.probe import MANIFEST, PARTIAL_DIR, write


def summary_of(path: Path) -> dict:
    return json.loads(path.read_text())


def procs_naming(text: str) -> list[int]:
    """Processes whose command line names ``text`` (a test's own unique folder)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit() and int(d) != os.getpid():
            with contextlib.suppress(OSError):
                if text.encode() in Path(f"/proc/{d}/cmdline").read_bytes():
                    out.append(int(d))
    return out


def wait_gone(text: str, timeout_s: float = 15) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while (left := procs_naming(text)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def big_source(root: Path, mib: int = 160) -> Path:
    root.mkdir()
    rng = np.random.default_rng(1)
    save_file({"w": rng.integers(0, 255, mib << 20, dtype=np.uint8)}, str(root / "model.safetensors"))
    (root / "config.json").write_text("{}")
    return root


SEATRIAL = [sys.executable, "-m", "seatrial.cli.app"]


def slow_sync(sshd: Sshd, src: Path, dest: str, *extra: str) -> subprocess.Popen[bytes]:
    cmd = [*SEATRIAL, "sync", str(src), dest, "--bwlimit", "8", *extra, *sshd.flags()]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=ctrl_c_reaches)


def wait_receiving(remote: Path, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not list(remote.glob(".model.safetensors.*")):
        time.sleep(0.02)  # rsync receives into a temporary beside the final name
    assert list(remote.glob(".model.safetensors.*")), "rsync never began receiving"


# --- nothing lost, nothing run ------------------------------------------------------------------------


def test_sync_deletes_no_user_file_and_hides_none_in_src(
    checkpoint: Path, sshd: Sshd, tmp_path: Path
) -> None:
    """Item 4 (and 3: no manifest for a DEST that is not identical)."""
    (checkpoint / ".notes.backup").write_text("a user's file in SRC")
    remote = tmp_path / "dst"
    (remote / "other").mkdir(parents=True)
    (remote / ".config.backup").write_text("a user's file")
    (remote / "other" / ".thesis.draft1").write_text("a user's thesis")
    (remote / ".config.json.Ab12Cd").write_text("stale temporary of config.json from a killed rsync")
    code, out = sync(sshd, str(checkpoint), f"{sshd.target}:{remote}", "--json", str(tmp_path / "s.json"))
    row = summary_of(tmp_path / "s.json")["destinations"][0]
    assert (remote / ".config.backup").read_text() == "a user's file"
    assert (remote / "other" / ".thesis.draft1").read_text() == "a user's thesis"
    assert not (remote / ".config.json.Ab12Cd").exists() and row["cleared"] == [".config.json.Ab12Cd"]
    assert (remote / ".notes.backup").read_text() == "a user's file in SRC"  # sent, not filtered out
    assert code == 1 and row["differences"] == [
        ".config.backup: not in the source",
        "other/.thesis.draft1: not in the source",
    ], out
    assert not (remote / MANIFEST).exists()  # only an identical DEST gets the manifest


def test_the_manifest_write_never_follows_a_planted_symlink(tmp_path: Path) -> None:
    """Item 3: the temporary is made by mkstemp in the folder, never at a name someone can plant."""
    victim = tmp_path / "victim"
    victim.write_text("precious")
    dest = tmp_path / "dst"
    dest.mkdir()
    (dest / f"{MANIFEST}.tmp-seatrial").symlink_to(victim)
    (dest / MANIFEST).symlink_to(victim)
    write({"path": str(dest / MANIFEST), "text": "{}"})
    assert victim.read_text() == "precious"
    assert (dest / MANIFEST).read_text() == "{}" and not (dest / MANIFEST).is_symlink()
    assert sorted(p.name for p in dest.iterdir()) == [MANIFEST, f"{MANIFEST}.tmp-seatrial"]


def test_a_dest_string_runs_no_command(checkpoint: Path, sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Item 5: RSYNC_OLD_ARGS (a user's setting) would hand the path to the remote shell; -s never does."""
    monkeypatch.setenv("RSYNC_OLD_ARGS", "1")
    marker = tmp_path / "PWNED"
    weird = tmp_path / f"x`touch {marker}`$(touch {marker})"
    code, out = sync(sshd, str(checkpoint), f"{sshd.target}:{weird}")
    assert not marker.exists()
    assert code == 0, out
    assert tree(weird) == tree(checkpoint)  # the files are in the folder of exactly that name


def test_a_host_that_starts_with_a_dash_is_refused(checkpoint: Path, sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    result = invoke(["sync", *sshd.flags(), str(checkpoint), "--", "-oProxyCommand=touch PWNED:dst"])
    assert result.code == 2 and "cannot start with '-'" in result.output, result.output
    assert not (tmp_path / "PWNED").exists()
    result = invoke(["doctor", *sshd.flags(), "--", "local", "-oProxyCommand=touch PWNED2"])
    assert result.code == 2 and "cannot start with '-'" in result.output, result.output
    assert not (tmp_path / "PWNED2").exists()


def test_a_tilde_dest_is_one_folder_for_rsync_and_the_probe(checkpoint: Path, sshd: Sshd) -> None:
    name = f"seatrial-test-{uuid.uuid4().hex[:8]}"
    home = Path(pwd.getpwnam("root").pw_dir)
    try:
        code, out = sync(sshd, str(checkpoint), f"{sshd.target}:~/{name}")
        assert code == 0, out
        assert tree(home / name) == tree(checkpoint) and (home / name / MANIFEST).exists()
    finally:
        subprocess.run(["rm", "-rf", "--", str(home / name)], check=True)


def test_two_thousand_files_to_an_ssh_destination(sshd: Sshd, tmp_path: Path) -> None:
    """Item 6: the probe's arguments (a manifest of 2,000 files) go on stdin, never argv."""
    src = tmp_path / "src"
    (src / "parts").mkdir(parents=True)
    (src / "config.json").write_text("{}")
    for i in range(2000):
        (src / "parts" / f"part-{i:05d}-with-a-rather-long-name-as-tools-write-them.json").write_text(
            f'{{"i": {i}}}'
        )
    code, out = sync(sshd, str(src), f"{sshd.target}:{tmp_path / 'dst'}", "--json", str(tmp_path / "s.json"))
    assert code == 0, out[-2000:]
    assert summary_of(tmp_path / "s.json")["destinations"][0]["ok"]
    assert len(json.loads((tmp_path / "dst" / MANIFEST).read_text())["files"]) == 2001


# --- host keys ----------------------------------------------------------------------------------------


def test_an_unknown_host_key_is_refused_until_trusted(checkpoint: Path, sshd: Sshd, tmp_path: Path) -> None:
    """Item 7: nothing is written to known_hosts without --accept-new-host-key."""
    fresh = tmp_path / "known_hosts"
    flags = [f if f != str(sshd.ssh.known_hosts) else str(fresh) for f in sshd.flags()]
    dest = f"{sshd.target}:{tmp_path / 'dst'}"
    result = invoke(["sync", str(checkpoint), dest, *flags])
    assert result.code == 4 and "--accept-new-host-key" in result.output, result.output
    assert not fresh.exists() or fresh.read_text() == ""
    result = invoke(["doctor", "local", f"{sshd.target}:{tmp_path}", *flags])
    assert result.code == 4 and "--accept-new-host-key" in result.output, result.output
    result = invoke(["sync", str(checkpoint), dest, *flags, "--accept-new-host-key"])
    assert result.code == 0, result.output
    assert "ssh-ed25519" in fresh.read_text()


def test_a_changed_host_key_says_so(checkpoint: Path, sshd: Sshd, tmp_path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().split()[:2]
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[{sshd.host}]:{sshd.port} {' '.join(other)}\n")
    flags = [f if f != str(sshd.ssh.known_hosts) else str(wrong) for f in sshd.flags()]
    for args in (["sync", str(checkpoint), f"{sshd.target}:{tmp_path / 'dst'}"],
                 ["doctor", "local", f"{sshd.target}:{tmp_path}"]):  # fmt: skip
        result = invoke([*args, *flags, "--accept-new-host-key"])
        assert result.code == 4 and "host key changed" in result.output, result.output
    assert not (tmp_path / "dst").exists()


# --- words that say what was compared ------------------------------------------------------------------


def test_key_verification_says_tensor_data_was_not_hashed(
    checkpoint: Path, sshd: Sshd, tmp_path: Path
) -> None:
    """Item 2: identical under --verify key names what it rests on; a .bin is compared by size only."""
    (checkpoint / "pytorch_model.bin").write_bytes(os.urandom(4096))
    code, out = sync(sshd, str(checkpoint), f"{sshd.target}:{tmp_path / 'dst'}", "--json", str(tmp_path / "s.json"),
                     "--out", str(tmp_path / "run"))  # fmt: skip
    assert code == 0, out
    row = summary_of(tmp_path / "s.json")["destinations"][0]
    assert "tensor data not hashed" in row["compared"] and row["size_only"] == ["pytorch_model.bin"]
    assert "tensor data not hashed" in out and "by size only" in out
    assert "tensor data not hashed" in (tmp_path / "run" / "report.html").read_text()
    code, out = sync(
        sshd, str(checkpoint), f"{sshd.target}:{tmp_path / 'dst'}", "--check", "--verify", "full"
    )
    assert code == 0 and "tensor data not hashed" not in out


def test_a_file_full_verification_finds_different_is_sent_again(
    checkpoint: Path, sshd: Sshd, tmp_path: Path
) -> None:
    """Item 2: same size, same mtime, other bytes (a bit flipped on disk): the next sync repairs it."""
    remote = tmp_path / "dst"
    assert sync(sshd, str(checkpoint), f"{sshd.target}:{remote}")[0] == 0
    shard = remote / "model-00002-of-00003.safetensors"
    st = shard.stat()
    data = bytearray(shard.read_bytes())
    data[-100] ^= 0x01
    shard.write_bytes(bytes(data))
    os.utime(shard, ns=(st.st_atime_ns, st.st_mtime_ns))  # rsync's quick check sees nothing
    code, out = sync(sshd, str(checkpoint), f"{sshd.target}:{remote}", "--check", "--verify", "full")
    assert code == 1 and "content differs (full hash)" in out
    code, out = sync(sshd, str(checkpoint), f"{sshd.target}:{remote}", "--verify", "full", "--json",
                     str(tmp_path / "s.json"))  # fmt: skip
    assert code == 0, out
    assert tree(remote) == tree(checkpoint)
    assert summary_of(tmp_path / "s.json")["destinations"][0]["resent"] == [shard.name]


def test_a_symlink_in_dest_is_reported_not_followed(checkpoint: Path, sshd: Sshd, tmp_path: Path) -> None:
    remote = tmp_path / "dst"
    assert sync(sshd, str(checkpoint), f"{sshd.target}:{remote}")[0] == 0
    (remote / "config.json").unlink()
    (remote / "config.json").symlink_to(checkpoint / "config.json")  # the very same bytes, elsewhere
    code, out = sync(sshd, str(checkpoint), f"{sshd.target}:{remote}", "--check", "--verify", "full")
    assert code == 1 and "config.json: a symlink in the destination" in out, out


# --- resume, signals, room ----------------------------------------------------------------------------


def test_an_interrupted_shard_continues_from_its_partial(sshd: Sshd, tmp_path: Path) -> None:
    """Item 9: the rerun sends what is missing, not the whole shard again."""
    src = big_source(tmp_path / "src")
    remote = tmp_path / "dst"
    proc = slow_sync(sshd, src, f"{sshd.target}:{remote}")
    wait_receiving(remote)
    time.sleep(2.5)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 130
    held = (remote / PARTIAL_DIR / "model.safetensors").stat().st_size
    assert held > 4 << 20
    code, out = sync(sshd, str(src), f"{sshd.target}:{remote}", "--json", str(tmp_path / "s.json"))
    assert code == 0, out
    stream = next(s for s in summary_of(tmp_path / "s.json")["destinations"][0]["streams"] if s["resumed"])
    size = (src / "model.safetensors").stat().st_size
    assert stream["literal_bytes"] <= size - held + (1 << 20), (stream, held)
    assert tree(remote) == tree(src) and not (remote / PARTIAL_DIR).exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_every_rsync(sig: signal.Signals, sshd: Sshd, tmp_path: Path) -> None:
    src = big_source(tmp_path / "src", mib=96)
    remote = tmp_path / f"dst-{uuid.uuid4().hex[:8]}"
    proc = slow_sync(sshd, src, f"{sshd.target}:{remote}", "--streams", "2")
    try:
        wait_receiving(remote)
        time.sleep(0.5)
        proc.send_signal(sig)
        assert proc.wait(30) == 130
        left = wait_gone(str(remote))
        assert left == [], f"processes still writing into DEST after seatrial exited: {left}"
        assert not list(remote.glob(".model.safetensors.*"))  # partial data only in the partial folder
        assert (remote / PARTIAL_DIR / "model.safetensors").stat().st_size > 0
    finally:
        proc.kill()
        for pid in procs_naming(str(remote)):  # what the bug left running (today's main)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)], check=True)
    try:
        yield small
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_free_space_is_read_where_a_relative_dest_will_be(tmpfs: Path, tmp_path: Path) -> None:
    src = write_checkpoint(tmp_path / "src", shards=2, rows=2048)  # 4 MiB: more than the 2 MiB there
    cmd = [*SEATRIAL, "sync", str(src), "new/m", "--json", str(tmp_path / "s.json")]
    done = subprocess.run(cmd, cwd=tmpfs, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    row = summary_of(tmp_path / "s.json")["destinations"][0]
    assert row["error"].startswith("disk full:") and f"free at {tmpfs}" in row["error"], row


def test_a_disk_full_rerun_says_how_to_clear_the_partials(tmpfs: Path, tmp_path: Path) -> None:
    src = write_checkpoint(tmp_path / "src", shards=3, rows=256)  # about 0.8 MB
    dest = tmpfs / "m"
    (dest / PARTIAL_DIR).mkdir(parents=True)
    (dest / PARTIAL_DIR / "model-00001-of-00003.safetensors").write_bytes(b"\0" * (1536 << 10))
    result = invoke(["sync", str(src), str(dest), "--json", str(tmp_path / "s.json")])
    assert result.code == 1, result.output
    error = summary_of(tmp_path / "s.json")["destinations"][0]["error"]
    assert (
        error.startswith("disk full:")
        and "partial files" in error
        and f"find {dest} -name .rsync-partial" in error
    )


# --- exit codes ---------------------------------------------------------------------------------------


def test_a_dest_that_is_a_file_is_bad_input(checkpoint: Path, sshd: Sshd, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    for dest in (str(tmp_path / "afile"), f"{sshd.target}:{tmp_path / 'afile'}"):
        code, out = sync(sshd, str(checkpoint), dest)
        assert code == 2 and "is a file, not a folder" in out, out
    assert (tmp_path / "afile").read_text() == "x"


@pytest.mark.parametrize("dest", ["", "local:", "  "])
def test_an_empty_dest_is_refused(checkpoint: Path, dest: str) -> None:
    result = invoke(["sync", str(checkpoint), dest])
    assert result.code == 2 and "give a folder" in result.output, result.output


def test_an_absent_dest_is_created(checkpoint: Path, sshd: Sshd, tmp_path: Path) -> None:
    code, out = sync(sshd, str(checkpoint), f"{sshd.target}:{tmp_path / 'a' / 'b' / 'c'}")
    assert code == 0 and tree(tmp_path / "a" / "b" / "c") == tree(checkpoint), out


def test_a_file_name_that_is_not_utf8_is_refused_by_name(checkpoint: Path, tmp_path: Path) -> None:
    bad = os.fsencode(checkpoint) + b"/caf\xe9.json"
    with open(bad, "wb") as fh:
        fh.write(b"{}")
    result = invoke(["sync", str(checkpoint), str(tmp_path / "dst")])
    assert result.code == 2 and "caf\\xe9.json" in result.output and "not UTF-8" in result.output, (
        result.output
    )
    assert not (tmp_path / "dst").exists()


def test_a_connection_that_drops_mid_transfer_is_exit_4(tmp_path: Path) -> None:
    own = start_sshd(tmp_path / "sshd")  # this test stops it
    src = big_source(tmp_path / "src", mib=96)
    remote = tmp_path / "dst"
    proc = slow_sync(own, src, f"{own.target}:{remote}", "--json", str(tmp_path / "s.json"))
    try:
        wait_receiving(remote)
        own.stop()  # the node goes away: its sessions killed, the listener gone
        assert proc.wait(120) == 4, proc.stderr.read().decode()[-2000:] if proc.stderr else ""
    finally:
        proc.kill()
        own.stop() if own.proc.poll() is None else None
    row = summary_of(tmp_path / "s.json")["destinations"][0]
    assert row["unreachable"] and row["stage"] == "transfer", row


def test_a_dest_file_name_that_is_not_utf8_is_reported_escaped(
    checkpoint: Path, sshd: Sshd, tmp_path: Path
) -> None:
    """Never exit 70: a name the destination holds that is not UTF-8 is a difference, shown escaped."""
    remote = tmp_path / "dst"
    assert sync(sshd, str(checkpoint), f"{sshd.target}:{remote}")[0] == 0
    with open(os.fsencode(remote) + b"/caf\xe9.json", "wb") as fh:
        fh.write(b"{}")
    code, out = sync(
        sshd, str(checkpoint), f"{sshd.target}:{remote}", "--check", "--json", str(tmp_path / "s.json")
    )
    assert code == 1 and "caf\\xe9.json: not in the source" in out, out
    assert summary_of(tmp_path / "s.json")["destinations"][0]["differences"] == [
        "caf\\xe9.json: not in the source"
    ]
