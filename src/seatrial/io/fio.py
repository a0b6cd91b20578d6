"""fio (Debian's ``fio`` package) on a node, its JSON read back. One job section per measurement, run with
``--output-format=json``; a node without fio makes the trial UNAVAILABLE naming the package."""

from __future__ import annotations

import json
from typing import Any

from seatrial.io.nodes import Node

FIO_PACKAGE = "fio (Debian/Ubuntu: apt-get install fio; scripts/setup.sh installs it)"


class FioError(Exception):
    """fio ran and failed (its message), or answered no JSON."""


def run_fio(node: Node, args: list[str], timeout_s: float) -> list[dict[str, Any]]:
    """fio with ``args`` there; the ``jobs`` of its JSON. FioError when it failed."""
    done = node.run(["fio", "--output-format=json", *args], timeout_s=timeout_s, tracked=True)
    text = done.stdout.decode(errors="replace")
    start = text.find("{")  # fio may print notes before its JSON
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except ValueError:
        doc = None
    if done.returncode != 0 or doc is None:
        err = [
            x
            for x in (done.stderr.decode(errors="replace") + text[: start if start > 0 else 0]).splitlines()
            if x.strip()
        ]
        raise FioError(f"fio exited {done.returncode}: {err[-1].strip() if err else 'no output'}")
    jobs = doc.get("jobs") or []
    bad = [j for j in jobs if j.get("error")]
    if bad:
        raise FioError(f"fio job {bad[0].get('jobname')}: error {bad[0]['error']}")
    return jobs


def direction(job: dict[str, Any], rw: str) -> dict[str, Any]:
    """``{"gbps", "iops", "bytes", "runtime_s", "p50_ms", "p95_ms", "p99_ms"}`` of a job's ``read`` or ``write``."""
    part = job[rw]
    pct = (part.get("clat_ns") or {}).get("percentile") or {}

    def ms(p: str) -> float | None:
        v = pct.get(p)
        return round(v / 1e6, 3) if v else None

    runtime_s = part.get("runtime", 0) / 1000
    return {"gbps": round(part["bw_bytes"] / 1e9, 4), "iops": round(part.get("iops", 0.0), 1),
            "bytes": part.get("io_bytes", 0), "runtime_s": runtime_s,
            "p50_ms": ms("50.000000"), "p95_ms": ms("95.000000"), "p99_ms": ms("99.000000")}  # fmt: skip


def have_fio(node: Node) -> str | None:
    """None when fio is on the node's PATH, else why (naming the package)."""
    if node.has("fio"):
        return None
    return f"no fio on {node.spec}: install {FIO_PACKAGE}"
