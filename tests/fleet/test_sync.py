"""``seatrial sync`` with the system's rsync to a local folder and over a real sshd on loopback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from tests.clirun import ctrl_c_reaches, invoke
from tests.fleet.sshd import Sshd

from seatrial.fleet.probe import MANIFEST, PARTIAL_DIR


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != MANIFEST and PARTIAL_DIR not in p.parts}  # fmt: skip


def sync(sshd: Sshd, *args: str) -> tuple[int, str]:
    result = invoke(["sync", *args, *sshd.flags()])
    return result.code, result.output


def test_to_a_local_and_an_ssh_destination_then_check(checkpoint: Path, sshd: Sshd, tmp_path: Path) -> None:
    local, remote = tmp_path / "node-a" / "m", tmp_path / "node-b" / "m"
    code, out = sync(sshd, str(checkpoint), str(local), f"{sshd.target}:{remote}", "--streams", "2",
                     "--json", str(tmp_path / "s.json"), "--out", str(tmp_path / "run"))  # fmt: skip
    assert code == 0, out
    assert tree(local) == tree(checkpoint) == tree(remote)
    summary = json.loads((tmp_path / "s.json").read_text())
    plan = summary["plan"]
    assert plan["first"]["files"] == ["config.json", "model.safetensors.index.json", "tokenizer.json"]
    assert sorted(f for s in plan["streams"] for f in s["files"]) == sorted(
        p.name for p in checkpoint.glob("*.safetensors")
    )
    assert len(plan["streams"]) == 2 and all(
        d["ok"] and d["differences"] == [] for d in summary["destinations"]
    )
    for dest in (local, remote):
        written = json.loads((dest / MANIFEST).read_text())
        assert written["key"] == summary["manifest"]["key"] and written["verified"]["differences"] == []
    assert "seatrial sync" in (tmp_path / "run" / "report.html").read_text()
    code, out = sync(
        sshd, str(checkpoint), str(local), f"{sshd.target}:{remote}", "--check", "--verify", "full"
    )
    assert code == 0, out


def test_check_finds_a_flipped_byte(checkpoint: Path, sshd: Sshd, tmp_path: Path) -> None:
    remote = tmp_path / "b"
    assert sync(sshd, str(checkpoint), f"{sshd.target}:{remote}")[0] == 0
    shard = remote / "model-00002-of-00003.safetensors"
    data = bytearray(shard.read_bytes())
    data[-100] ^= 0x01  # in the tensor data: same size, same header
    shard.write_bytes(bytes(data))
    code, out = sync(sshd, str(checkpoint), f"{sshd.target}:{remote}", "--check", "--verify", "full")
    assert code == 1 and "model-00002-of-00003.safetensors: content differs (full hash)" in out
    assert sync(sshd, str(checkpoint), f"{sshd.target}:{remote}", "--check")[0] == 0  # headers are equal
    config = remote / "config.json"
    config.write_text(config.read_text().replace("512", "513"))
    code, out = sync(sshd, str(checkpoint), f"{sshd.target}:{remote}", "--check")
    assert code == 1 and "config.json: content differs (key hash)" in out


def test_a_killed_sync_resumes_to_an_identical_tree(sshd: Sshd, tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    rng = np.random.default_rng(1)
    save_file({"w": rng.integers(0, 255, 160 << 20, dtype=np.uint8)}, str(src / "model.safetensors"))
    (src / "config.json").write_text("{}")
    remote = tmp_path / "dst"
    cmd = [sys.executable, "-m", "seatrial.cli.app", "sync", str(src), f"{sshd.target}:{remote}", "--bwlimit", "8",
           *sshd.flags()]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=ctrl_c_reaches)
    partial = remote / PARTIAL_DIR
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not list(remote.glob(".model.safetensors.*")):
        time.sleep(0.02)  # rsync receives into a temporary beside the final name
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(30) == 130
    assert not (remote / "model.safetensors").exists()  # never a partial file under its final name
    assert any(p.stat().st_size > 0 for p in partial.iterdir())  # rsync kept what it had received
    code, out = sync(sshd, str(src), f"{sshd.target}:{remote}", "--verify", "full")
    assert code == 0, out
    assert tree(remote) == tree(src) and not partial.exists()


def test_an_unreachable_destination_fails_alone(checkpoint: Path, sshd: Sshd, tmp_path: Path) -> None:
    local = tmp_path / "a"
    code, out = sync(sshd, str(checkpoint), f"root@127.0.0.2:{tmp_path / 'nowhere'}", str(local),
                     "--json", str(tmp_path / "s.json"))  # fmt: skip
    assert code == 4, out
    rows = {d["dest"]: d for d in json.loads((tmp_path / "s.json").read_text())["destinations"]}
    bad = rows[f"root@127.0.0.2:{tmp_path / 'nowhere'}"]
    assert bad["ok"] is False and "cannot be reached" in bad["error"] and bad["unreachable"]
    assert rows[str(local)]["ok"] and tree(local) == tree(checkpoint)


def test_a_full_disk_or_a_folder_without_rights_is_a_clear_error(
    checkpoint: Path, sshd: Sshd, tmp_path: Path
) -> None:
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(small)], check=True)
    try:
        code, _out = sync(
            sshd, str(checkpoint), f"{sshd.target}:{small / 'm'}", "--json", str(tmp_path / "s.json")
        )
    finally:
        subprocess.run(["umount", str(small)], check=True)
    assert code == 1
    row = json.loads((tmp_path / "s.json").read_text())["destinations"][0]
    assert row["error"].startswith("disk full:") and str(small / "m") in row["dest"]


def test_hardlinks_and_sparse_files_are_planned_knowingly(tmp_path: Path) -> None:
    from seatrial.fleet.probe import manifest
    from seatrial.fleet.transfer import plan_transfer

    src = tmp_path / "src"
    src.mkdir()
    save_file({"w": np.ones(2 << 20, np.uint8) * 3}, str(src / "a.safetensors"))
    os.link(src / "a.safetensors", src / "b.safetensors")
    outside = tmp_path / "elsewhere.safetensors"
    save_file({"x": np.ones(2 << 20, np.uint8)}, str(outside))
    os.link(outside, src / "c.safetensors")
    with open(src / "d.safetensors", "wb") as fh:
        fh.truncate(8 << 20)  # a sparse file (no header: planning only)
    plan = plan_transfer(manifest({"root": str(src)}), streams=4)
    assert plan["hardlink_groups"] == [["a.safetensors", "b.safetensors"]]
    assert next(s for s in plan["streams"] if "a.safetensors" in s["files"])["files"][:2] == [
        "a.safetensors",
        "b.safetensors",
    ]
    assert plan["linked_outside"] == ["c.safetensors"] and plan["sparse"] == ["d.safetensors"]
    assert plan["travel_bytes"] == plan["apparent_bytes"] - (src / "a.safetensors").stat().st_size
    assert any("travel once" in n for n in plan["notes"]) and any("travel whole" in n for n in plan["notes"])
