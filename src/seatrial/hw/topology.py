"""The GPUs' interconnect as ``nvidia-smi topo -m`` prints it, read into the inventory's evidence.

The matrix is tab-separated: a header naming the devices (``GPU0``.., ``NIC0``..) then ``CPU Affinity``,
``NUMA Affinity``, ``GPU NUMA ID``; one row per device with one cell per device (``X`` for itself,
``NV18`` for 18 bonded NVLinks, ``PIX``/``PXB``/``PHB``/``NODE``/``SYS`` for PCIe paths), then for a GPU
its affinities; the ``NIC Legend`` names the NICs. Escape sequences (the header is underlined) are dropped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections import Counter
from itertools import combinations
from typing import Any

from seatrial.childenv import child_environ

ANSI = re.compile(r"\x1b\[[0-9;]*m")
AFFINITY_COLUMNS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
DEVICE = re.compile(r"(GPU|NIC)\d+")
TIMEOUT_S = 30


class TopologyError(ValueError):
    """The text is not a ``nvidia-smi topo -m`` matrix."""


def parse_topology(text: str) -> dict[str, Any]:
    """``{"links": {GPUi: {device: link}}, "affinity": {GPUi: {column: value}}, "nics": {NICi: name}}``."""
    lines = [ANSI.sub("", line).rstrip("\n") for line in text.splitlines()]
    header_at = next((i for i, line in enumerate(lines) if "\t" in line and "GPU0" in line.split("\t")), None)
    if header_at is None:
        raise TopologyError("no tab-separated header naming GPU0")
    header = [c.strip() for c in lines[header_at].split("\t")][1:]
    devices = [c for c in header if DEVICE.fullmatch(c)]
    extra = [c for c in header[len(devices) :] if c]
    links: dict[str, dict[str, str]] = {}
    affinity: dict[str, dict[str, str]] = {}
    for line in lines[header_at + 1 :]:
        cells = [c.strip() for c in line.split("\t")]
        if not DEVICE.fullmatch(cells[0]):
            break
        if len(cells) < len(devices) + 1:
            raise TopologyError(f"row {cells[0]} has {len(cells) - 1} cells for {len(devices)} devices")
        if cells[0].startswith("GPU"):
            row = dict(zip(devices, cells[1 : len(devices) + 1], strict=True))
            links[cells[0]] = {d: link for d, link in row.items() if d != cells[0]}
            rest = [c for c in cells[len(devices) + 1 :] if c]
            affinity[cells[0]] = dict(zip(extra, rest, strict=False))
    if not links:
        raise TopologyError("no GPU rows under the header")
    nics = dict(re.findall(r"^\s*(NIC\d+):\s*(\S+)\s*$", "\n".join(lines), flags=re.M))
    return {"links": links, "affinity": affinity, "nics": nics}


def gpu_pairs(topology: dict[str, Any], selected: list[int]) -> dict[str, list[str]]:
    """Link kind -> the pairs of selected GPUs joined by it (``GPU0-GPU1``), most common kind first."""
    links = topology["links"]
    found: dict[str, list[str]] = {}
    for i, j in combinations(sorted(selected), 2):
        link = links.get(f"GPU{i}", {}).get(f"GPU{j}", "unknown")
        found.setdefault(link, []).append(f"GPU{i}-GPU{j}")
    counts = Counter({k: len(v) for k, v in found.items()})
    return {k: found[k] for k, _ in counts.most_common()}


def describe(pairs: dict[str, list[str]]) -> str:
    """``NV18 between all 28 GPU pairs``; ``GPU0-GPU1: NV18``; ``GPU pairs: 16 SYS, 8 NODE, 4 PIX``."""
    total = sum(len(v) for v in pairs.values())
    if total == 0:
        return "one GPU: no GPU pairs"
    if len(pairs) == 1:
        link, members = next(iter(pairs.items()))
        return f"{members[0]}: {link}" if total == 1 else f"{link} between all {total} GPU pairs"
    return "GPU pairs: " + ", ".join(f"{len(v)} {k}" for k, v in pairs.items())


def read_topology(selected: list[int]) -> tuple[dict[str, Any] | None, str | None]:
    """The parsed matrix with the selected GPUs' pairs by link kind, or None and why it could not be read."""
    if shutil.which("nvidia-smi") is None:
        return None, "nvidia-smi not found on PATH"
    try:
        done = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True, timeout=TIMEOUT_S,
                              check=False, env=child_environ({"LC_ALL": "C"}))  # fmt: skip
    except (subprocess.SubprocessError, OSError) as exc:
        return None, f"nvidia-smi topo -m: {exc}"
    if done.returncode != 0:
        why = (done.stderr or done.stdout).strip().splitlines()
        return None, f"nvidia-smi topo -m exited {done.returncode}" + (f": {why[0]}" if why else "")
    try:
        topology = parse_topology(done.stdout)
    except TopologyError as exc:
        return None, f"nvidia-smi topo -m: {exc}"
    pairs = gpu_pairs(topology, selected)
    return {**topology, "gpu_pairs": pairs, "summary": describe(pairs)}, None
