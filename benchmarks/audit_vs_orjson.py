"""Audit wall time on the full-shape seed-000 replica against a minimal orjson header loop.

The peer reads each shard's 8-byte length and JSON header and parses it with orjson, nothing
else: the floor any header-only audit must pay. In-process, both run interleaved in the same
process, best of N each (ratio audit / peer). As a user meets it, the whole command
(``seatrial audit DIR --json F``, a fresh process) runs interleaved with a fresh interpreter that
imports orjson, parses the index and every header and exits: the headline ratio is command / that
floor (target: within 1.5x), with ``seatrial audit --help`` beside it for the start-up alone.

    PYTHONPATH=src:. python benchmarks/audit_vs_orjson.py [--repeat 5] [--dir PATH]
"""

from __future__ import annotations

import argparse
import struct
import subprocess
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


FLOOR = """
import struct, sys
from pathlib import Path
import orjson
root = Path(sys.argv[1])
orjson.loads((root / "model.safetensors.index.json").read_bytes())
for path in sorted(root.glob("*.safetensors")):
    with open(path, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        orjson.loads(fh.read(n))
"""


def _command() -> list[str]:
    """The installed ``seatrial`` entry point beside this interpreter, else ``python -m``."""
    exe = Path(sys.executable).with_name("seatrial")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "seatrial.cli.app"]


def _run_s(cmd: list[str]) -> float:
    start = time.perf_counter_ns()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter_ns() - start) / 1e9


def whole_process(root: Path, repeat: int, out: Path) -> tuple[list[float], list[float], list[float]]:
    """Wall seconds of the whole command, of the fresh-interpreter floor, of ``audit --help``."""
    cmd, floor, helps = [], [], []
    audit_cmd = [*_command(), "audit", str(root), "--json", str(out)]
    for _ in range(repeat):
        cmd.append(_run_s(audit_cmd))
        floor.append(_run_s([sys.executable, "-c", FLOOR, str(root)]))
        helps.append(_run_s([*_command(), "audit", "--help"]))
    return cmd, floor, helps


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
        cmd_s, fresh_s, help_s = whole_process(root, args.repeat, Path(tmp) / "audit.json")
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
    print("whole process, as a user runs it:")
    print(f"  seatrial audit DIR --json F:                 {_stats(cmd_s)}")
    print(f"  fresh interpreter + orjson, index + headers: {_stats(fresh_s)}")
    print(f"  seatrial audit --help (start-up alone):      {_stats(help_s)}")
    ratio = min(cmd_s) / min(fresh_s)
    print(f"ratio command / fresh-interpreter floor (best of {args.repeat}): {ratio:.2f}x  (target <= 1.5x)")


def _stats(seconds: list[float]) -> str:
    return f"best {min(seconds):.3f} s  median {sorted(seconds)[len(seconds) // 2]:.3f} s"


if __name__ == "__main__":
    main()
