"""io fixtures: the tools the trials drive (fio, iperf3), skipped with the reason where missing (failed where
``SEATRIAL_REQUIRE_IO=1``, as CI sets)."""

from __future__ import annotations

import os
import shutil

import pytest


def need(*tools: str, root: bool = False) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    why = (
        f"missing {', '.join(missing)} (scripts/setup.sh installs Debian's fio and iperf3 as root)"
        if missing
        else None
    )
    if why is None and root and os.geteuid() != 0:
        why = "needs root (network namespaces, loop devices, cgroups)"
    if why:
        if os.environ.get("SEATRIAL_REQUIRE_IO") == "1":
            pytest.fail(why)
        pytest.skip(why)


SMALL = ["--runtime", "1", "--size-mib", "16", "--jobs", "2", "--kv-concurrency", "1,4", "--kv-chunks", "8"]
