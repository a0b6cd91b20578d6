"""storage.read against a known truth: a loop device (ext4 on a file) whose reads are throttled by the kernel's
block-I/O controller (cgroup v1 ``blkio.throttle.read_bps_device``, or v2 ``io.max`` where that is the
hierarchy), seatrial io running inside that cgroup: the measured sequential read lies within 15% of the
throttle and FAILs a floor above it; the same disk without the throttle PASSes that floor. Skips with the
kernel's reason where loop devices or the controller are refused (fails where ``SEATRIAL_REQUIRE_IO=1``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.io_trials.conftest import need

THROTTLE_BPS = 20 * 1024 * 1024
V1 = Path("/sys/fs/cgroup/blkio")
V2 = Path("/sys/fs/cgroup")


def _skip(why: str) -> None:
    if os.environ.get("SEATRIAL_REQUIRE_IO") == "1":
        pytest.fail(why)
    pytest.skip(why)


def _sh(*argv: str) -> str:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"{' '.join(argv)}: {done.stderr.strip()}")
    return done.stdout.strip()


@pytest.fixture(scope="module")
def throttled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(mount point of the loop device's filesystem, the cgroup folder that throttles its reads)."""
    need("fio", "losetup", "mkfs.ext4", root=True)
    root = tmp_path_factory.mktemp("loop")
    image, mnt = root / "disk.img", root / "mnt"
    mnt.mkdir()
    cgroup = (V1 if V1.is_dir() else V2) / f"seatrial-io-{uuid.uuid4().hex[:8]}"
    loop = None
    try:
        try:
            subprocess.run(["truncate", "-s", "192M", str(image)], check=True)
            _sh("mkfs.ext4", "-q", "-F", str(image))
            loop = _sh("losetup", "-f", "--show", str(image))
            _sh("mount", loop, str(mnt))
            majmin = _sh("lsblk", "-dno", "MAJ:MIN", loop).strip()
            cgroup.mkdir()
            if V1.is_dir():
                (cgroup / "blkio.throttle.read_bps_device").write_text(f"{majmin} {THROTTLE_BPS}\n")
            else:
                (cgroup / "io.max").write_text(f"{majmin} rbps={THROTTLE_BPS}\n")
        except OSError as exc:
            _skip(f"the kernel refused the throttled loop device: {exc}")
        yield mnt, cgroup
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        if loop:
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        if cgroup.is_dir():
            cgroup.rmdir()


def _read(mnt: Path, out: Path, cgroup: Path | None) -> dict:
    argv = [sys.executable, "-m", "seatrial.cli.app", "io", "--trials", "storage.read", "--path", str(mnt), "--repeats", "2",
            "--runtime", "2", "--size-mib", "16", "--jobs", "1", "--expect", "storage.read.gbps=0.05", "--max-cv", "10", "--json", str(out)]  # fmt: skip
    inside = ["sh", "-c", f'echo $$ > "{cgroup}/cgroup.procs" && exec "$@"', "sh"] if cgroup else []
    subprocess.run(
        [*inside, *argv],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        timeout=120,
    )
    (row,) = json.loads(out.read_text())["results"]
    return row


def test_read_within_15_percent_of_the_throttle_and_fails_the_floor(
    throttled: tuple[Path, Path], tmp_path: Path
) -> None:
    mnt, cgroup = throttled
    row = _read(mnt, tmp_path / "slow.json", cgroup)
    assert row["figures"]["seq_read_gbps"] == pytest.approx(THROTTLE_BPS / 1e9, rel=0.15), row
    assert row["verdict"] == "FAIL" and "below the floor 0.05" in row["reason"]
    free = _read(mnt, tmp_path / "free.json", None)
    assert free["verdict"] == "PASS", (
        free
    )  # the spread rule is tested on known numbers (test_judge); a shared host varies
