"""The figures issue 43's closing note gives, read from a `seatrial hw` sheet (--json): each trial's wall time,
the collectives' busbw at the largest size per group size (and where it falls), each GPU's TFLOP/s beside
the median of the host's like GPUs. Usage: python3 closing_note.py hw_h200x8.json"""

from __future__ import annotations

import json
import sys


def main(path: str) -> None:
    with open(path) as f:
        sheet = json.load(f)
    rows = sheet["trials"]
    walls = {r["name"]: r["evidence"]["trial_wall_s"] for r in rows if "trial_wall_s" in r.get("evidence", {})}
    print(f"{len(sheet['gpus'])} GPU(s); passed {sheet.get('passed')}; counts {sheet.get('counts')}")
    print("wall per trial (all selected GPUs at once): " + ", ".join(f"{k} {v:g} s" for k, v in walls.items()))
    for r in rows:
        if r["name"] == "collectives":
            ev = r["evidence"]
            print(f"collectives {r['verdict']}: {'; '.join(r.get('reasons') or []) or 'no fall'}")
            for ranks, per_op in (ev.get("by_group") or {}).items():
                print(f"  {ranks} ranks: " + ", ".join(
                    f"{op} {v['busbw_gbps']:.1f} GB/s at {v['size_bytes'] / 2**30:g} GiB" for op, v in per_op.items()))
    fleet = {(r["name"], r["gpu"]): r for r in rows if r["name"].startswith("fleet.")}
    for r in rows:
        if r["name"] in ("precision.bf16", "precision.fp8", "burn") and "tflops" in r.get("evidence", {}):
            row = fleet.get(("fleet." + r["name"], r["gpu"]))
            beside = f"median {row['evidence'].get('kind_median')}, {row['verdict']}" if row else "no fleet row"
            print(f"  {r['name']} GPU {r['gpu']}: {r['evidence']['tflops']} TFLOP/s ({beside})")


if __name__ == "__main__":
    main(sys.argv[1])
