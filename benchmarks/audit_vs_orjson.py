"""Audit wall time on the full-shape seed-000 replica against a minimal orjson header loop.

The peer reads each shard's 8-byte length and JSON header and parses it with orjson, nothing
else: the floor any header-only audit must pay. Both run interleaved in the same process,
best of N each; the printed ratio is audit / peer (target: within 1.5x).

    PYTHONPATH=src:. python benchmarks/audit_vs_orjson.py [--repeat 5] [--dir PATH]
"""

from __future__ import annotations

import argparse
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.ckptgen.seed000 import write_seed000

from seatrial.checkpoint import audit


def orjson_loop(root: Path) -> int:
    """Parse every shard header with orjson; return the number of entries seen."""
    entries = 0
    for path in sorted(root.glob("*.safetensors")):
        with open(path, "rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
            entries += len(orjson.loads(fh.read(n)))
    return entries


def orjson_loop_and_index(root: Path) -> int:
    """The same loop plus parsing model.safetensors.index.json, which the audit must also read."""
    orjson.loads((root / "model.safetensors.index.json").read_bytes())
    return orjson_loop(root)


def _timed(fn: Callable[[Path], object], arg: Path) -> float:
    start = time.perf_counter_ns()
    fn(arg)
    return (time.perf_counter_ns() - start) / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="an existing replica (else one is written)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.dir or Path(tmp) / "seed000"
        if args.dir is None:
            write_seed000(root)
        report = audit(root)
        entries = orjson_loop(root)
        audit_s, peer_s, floor_s = [], [], []
        for _ in range(args.repeat):  # interleaved so all see the same machine load
            audit_s.append(_timed(audit, root))
            peer_s.append(_timed(orjson_loop, root))
            floor_s.append(_timed(orjson_loop_and_index, root))
    ple = report.component("ple")
    print(
        f"replica: {len(report.files)} shards, {entries - len(report.files):,} tensors, "
        f"{report.total_bytes:,} bytes; PLE {ple.bytes if ple else 0:,} bytes"
    )
    print(f"audit (headers + index + configs + findings): {_stats(audit_s)}")
    print(f"orjson header loop (headers only):            {_stats(peer_s)}")
    print(f"orjson header loop + index.json parse:        {_stats(floor_s)}")
    ratio = min(audit_s) / min(peer_s)
    print(f"ratio audit / orjson loop (best of {args.repeat}): {ratio:.2f}x  (target <= 1.5x)")
    print(f"ratio audit / (orjson loop + index parse): {min(audit_s) / min(floor_s):.2f}x")


def _stats(seconds: list[float]) -> str:
    return f"best {min(seconds):.3f} s  median {sorted(seconds)[len(seconds) // 2]:.3f} s"


if __name__ == "__main__":
    main()
