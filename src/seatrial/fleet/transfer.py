"""The transfer plan of ``seatrial sync``, made from the source manifest before a byte moves.

- Small files (configs, tokenizer, index: everything that is not a safetensors shard, and anything under
  1 MiB) go first in one stream, so a node is recognisably "this model" early.
- The shards, largest first, each to the stream with the fewest bytes so far (greedy), over N streams.
- Names that share an inode inside SRC go to one stream and travel once (rsync ``-H``, which links only
  names of one transfer); a file hardlinked to something outside SRC travels whole (the link does not).
- Sparse files (allocated < apparent) travel with ``-S``: their zeros cross the wire, their holes stay
  holes at the destination.
- Symlinks travel as symlinks with the small files (never followed: one pointing out of SRC dangles at
  the destination, and the plan says so).
"""

from __future__ import annotations

from typing import Any

SMALL_BYTES = 1 << 20


def plan_transfer(manifest: dict[str, Any], streams: int | None) -> dict[str, Any]:
    files: dict[str, dict[str, Any]] = manifest["files"]
    groups: dict[tuple[int, int], list[str]] = {}
    for rel, meta in files.items():
        groups.setdefault((meta["inode"][0], meta["inode"][1]), []).append(rel)
    first = sorted(
        rel for rel, m in files.items() if not rel.endswith(".safetensors") or m["size"] < SMALL_BYTES
    )
    first_set = set(first)
    big = [names for names in groups.values() if not first_set & set(names)]
    big.sort(key=lambda names: (-files[names[0]]["size"], names[0]))
    n = max(1, min(streams or 8, len(big) or 1))
    bins: list[dict[str, Any]] = [{"files": [], "bytes": 0} for _ in range(n)]
    for names in big:
        target = min(bins, key=lambda b: b["bytes"])
        target["files"] += sorted(names)
        target["bytes"] += files[names[0]]["size"]
    linked = [sorted(names) for names in groups.values() if len(names) > 1]
    outside = sorted(
        rel for names in groups.values() for rel in names[:1] if files[rel]["nlink"] > len(names)
    )
    sparse = sorted(rel for rel, m in files.items() if m["allocated"] < m["size"])
    apparent = sum(m["size"] for m in files.values())
    travel = sum(files[names[0]]["size"] for names in groups.values())
    links = manifest.get("links") or {}
    return {
        "first": {"files": first, "bytes": sum(files[r]["size"] for r in first)},
        "links": sorted(links),
        "streams": [b for b in bins if b["files"]],
        "hardlink_groups": linked,
        "linked_outside": outside,
        "sparse": sparse,
        "apparent_bytes": apparent,
        "allocated_bytes": sum(m["allocated"] for m in files.values()),
        "travel_bytes": travel,
        "notes": _notes(files, linked, outside, sparse) + _link_notes(links),
    }


def _link_notes(links: dict[str, str]) -> list[str]:
    if not links:
        return []
    out = sorted(rel for rel, target in links.items() if target.startswith("/") or ".." in target.split("/"))
    note = f"{len(links)} symlinks travel as symlinks (not followed)"
    if out:
        note += f"; {len(out)} of them point out of SRC and dangle at the destination (e.g. {out[0]})"
    return [note]


def _notes(
    files: dict[str, Any], linked: list[list[str]], outside: list[str], sparse: list[str]
) -> list[str]:
    notes = []
    if linked:
        saved = sum(files[g[0]]["size"] * (len(g) - 1) for g in linked)
        notes.append(
            f"{len(linked)} groups of hardlinked names travel once each (-H, one stream per group): {saved:,} bytes not sent twice"
        )
    if outside:
        whole = sum(files[r]["size"] for r in outside)
        notes.append(f"{len(outside)} files are hardlinked to files outside SRC (as a converter leaves them): "
                     f"their {whole:,} bytes travel whole; the link cannot")  # fmt: skip
    if sparse:
        notes.append(
            f"{len(sparse)} sparse files: their zeros travel, and -S keeps their holes at the destination"
        )
    return notes
