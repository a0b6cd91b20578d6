"""``seatrial sync --streams 4`` against one ``rsync`` stream over SSH, on the same tree (~2 GB by default;
4 GiB on the 16-core host: ``--gb 4.295``) to a fresh folder through a throwaway sshd on loopback (this
machine, both ends), page cache dropped before each run where the kernel allows; and ``--verify full``
against ``sha256sum`` of the same bytes.

Printed: the machine and the tools (cores, CPU, AES/SHA instructions, rsync and ssh versions), wall
seconds and MB/s of each, the ratio sync / rsync (target >= 1.5x, sync's own verification included),
the verification times, and the ratio of ``sha256sum`` over both sides (the source's sums, then the copy's:
checking a copy by hand, the same bytes read as seatrial's full verification) to seatrial's full
verification of both sides (target >= 1); the source alone is printed beside it. The peer is rsync as one runs it by hand (``rsync -a -e ssh``, ssh's default cipher); further
lines give it the cipher seatrial picks, and seatrial one stream, so that the cipher's share and the
parallel streams' share are visible apart.

rsync, ssh, ssh-keygen and sshd are the ones on PATH (on a host without them, ``bash ssh-bundle/install.sh``
and ``export PATH=/usr/local/libexec/sshw:$PATH``: the sshd's sessions get this PATH, so that the remote
``rsync --server`` and ``python3`` are found there too). Needs root (the throwaway sshd).

    PYTHONPATH=src:. python benchmarks/sync_vs_rsync.py [--gb 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fleet.sshd import start_sshd  # noqa: E402


def build(root: Path, gb: float) -> int:
    """12 shards of random bytes (safetensors files as written by real tools) and small JSON files."""
    from safetensors.numpy import save_file

    root.mkdir(parents=True)
    rng = np.random.default_rng(0)
    shards = 12
    per = int(gb * 1e9 / shards)
    weight_map = {}
    for i in range(shards):
        name = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        save_file({f"t{i}": rng.integers(0, 255, per, dtype=np.uint8)}, str(root / name))
        weight_map[f"t{i}"] = name
    (root / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": per * shards}, "weight_map": weight_map})
    )
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        (root / name).write_text("{}")
    return sum(p.stat().st_size for p in root.iterdir())


DROPPED: list[bool] = []  # whether the kernel let each run start from a cold page cache


def drop_caches() -> None:
    subprocess.run(["sync"], check=True)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        DROPPED.append(True)
    except OSError:
        DROPPED.append(False)


def machine() -> list[str]:
    """The cores, the CPU and its AES / SHA instructions, and the tools' versions."""
    cpu = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next(
        (line.split(":", 1)[1].strip() for line in cpu.splitlines() if line.startswith("model name")), "?"
    )
    flags = next((line.split(":", 1)[1].split() for line in cpu.splitlines() if line.startswith("flags")), [])
    tools = []
    for argv in (["rsync", "--version"], ["ssh", "-V"]):
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        text = (done.stdout or done.stderr).splitlines()
        tools.append(f"{shutil.which(argv[0])}: {text[0].strip() if text else '?'}")
        at = next((i for i, line in enumerate(text) if line.strip().startswith("Checksum list")), None)
        tools += [f"  checksums: {text[at + 1].strip()}"] if at is not None and at + 1 < len(text) else []
    return [f"machine: {os.cpu_count()} cores, {model}; aes: {'aes' in flags}, sha_ni: {'sha_ni' in flags}",
            *tools]  # fmt: skip


BUSY: dict[float, float] = {}  # a run's wall seconds -> the machine's mean busy cores during it


def _cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat: busy = total - idle - iowait."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    total = sum(fields[:8])
    return total - fields[3] - fields[4], total


def timed(argv: list[str]) -> float:
    """Wall seconds of ``argv`` from a cold page cache; the machine's busy cores meanwhile go in BUSY
    (sender and receiver share this machine's CPUs over loopback)."""
    drop_caches()
    busy0, total0 = _cpu_ticks()
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    busy1, total1 = _cpu_ticks()
    BUSY[wall] = (busy1 - busy0) / max(1, total1 - total0) * (os.cpu_count() or 1)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="seatrial-sync-bench-", dir="/var/tmp"))
    sshd = start_sshd(work / "sshd", remote_path=os.environ.get("PATH"))
    try:
        src = work / "src"
        total = build(src, args.gb)
        ssh = shlex.join(sshd.ssh.argv()[:-2])  # without seatrial's cipher choice: ssh as configured
        ssh_gcm = shlex.join(sshd.ssh.argv())
        seatrial = [sys.executable, "-m", "seatrial.cli.app", "sync", str(src)]
        runs: dict[str, list[float]] = {}
        for r in range(args.rounds):
            for name, extra in (("rsync", ssh), ("rsync-gcm", ssh_gcm), ("sync-1", ["--streams", "1"]),
                                ("sync", ["--streams", "4"]), ("sync-full", ["--streams", "4", "--verify", "full"])):  # fmt: skip
                dest = work / f"{name}-{r}"
                if name.startswith("rsync"):
                    argv = ["rsync", "-a", "-e", str(extra), f"{src}/", f"{sshd.target}:{dest}/"]
                else:
                    argv = [*seatrial, f"{sshd.target}:{dest}", *extra, *sshd.flags()]
                runs.setdefault(name, []).append(timed(argv))
                shutil.rmtree(dest, ignore_errors=True)
        dest = work / "check"
        subprocess.run(
            [*seatrial, f"{sshd.target}:{dest}", *sshd.flags()], check=True, stdout=subprocess.DEVNULL
        )
        check_full = min(timed([*seatrial, f"{sshd.target}:{dest}", "--check", "--verify", "full", *sshd.flags()])
                         for _ in range(args.rounds))  # fmt: skip
        files = sorted(str(p) for p in src.iterdir())
        copies = sorted(str(p) for p in dest.iterdir() if not p.name.startswith("."))
        sha = min(timed(["sha256sum", *files]) for _ in range(args.rounds))
        # checking a copy by hand: the source's sums, then the copy's (sha256sum -c), each from a cold cache
        both = min(timed(["sha256sum", *files]) + timed(["sha256sum", *copies]) for _ in range(args.rounds))
        mb = total / 1e6
        print("\n".join(machine()))
        cold = (
            "page cache dropped before each run"
            if all(DROPPED)
            else "page cache NOT dropped (the kernel refused)"
        )
        print(f"tree: {len(files)} files, {mb:,.0f} MB; loopback sshd, {cold}; best of {args.rounds}")
        for name, label in (("rsync", "rsync, one stream (ssh's default cipher)"),
                            ("rsync-gcm", "rsync, one stream, -c aes128-gcm"),
                            ("sync-1", "seatrial sync --streams 1 (verify key)"),
                            ("sync", "seatrial sync --streams 4 (verify key)"),
                            ("sync-full", "seatrial sync --streams 4 --verify full")):  # fmt: skip
            best = min(runs[name])
            print(f"  {label:<42} {best:6.2f} s  {mb / best:6.0f} MB/s  {BUSY[best]:.2f} of "
                  f"{os.cpu_count()} cores busy  runs {[round(x, 2) for x in runs[name]]}")  # fmt: skip
        ratio = min(runs["rsync"]) / min(runs["sync"])
        met = "met" if ratio >= 1.5 else "NOT met"
        print(
            f"ratio sync / one rsync stream (with its verification) = {ratio:.2f}x  (target >= 1.5x: {met})"
        )
        print(
            f"ratio sync / one rsync stream with the same cipher = {min(runs['rsync-gcm']) / min(runs['sync']):.2f}x"
        )
        print(
            f"ratio sync --verify full / one rsync stream = {min(runs['rsync']) / min(runs['sync-full']):.2f}x"
        )
        print(
            f"verification of both sides, --check --verify full: {check_full:.2f} s ({mb / check_full:,.0f} MB/s of tree)"
        )
        print(f"sha256sum of the source alone: {sha:.2f} s ({mb / sha:,.0f} MB/s)")
        print(f"sha256sum of the source, then of the copy (checking a copy by hand): {both:.2f} s")
        met = "met" if both / check_full >= 1 else "NOT met"
        print(
            f"ratio sha256sum of both sides / seatrial full verification of both sides = {both / check_full:.2f}x  "
            f"(target >= 1: {met})"
        )
        print(f"ratio sha256sum of the source alone / seatrial full verification of both sides = {sha / check_full:.2f}x")
    finally:
        sshd.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
