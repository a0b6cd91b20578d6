"""Hardware profiles: memory per accelerator and per node, and whether the two are one pool.

Vendor figures are decimal GB (B300 288 GB = 288e9 bytes) except GB10, whose 128 GB LPDDR5x
leaves about 121 GiB to the OS; on unified memory ``gpu_memory_utilization`` reserves from the
same pool the OS, desktop and loader need.
"""

from __future__ import annotations

import re
import shutil
import subprocess

from pydantic import BaseModel, ConfigDict

from seatrial.childenv import child_environ
from seatrial.errors import ConfigError, HardwareError

GB = 10**9
GIB = 1024**3


class Hardware(BaseModel):
    """One accelerator kind: ``memory_bytes`` per accelerator, ``host_memory_bytes`` per node."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    memory_bytes: int
    unified: bool
    host_memory_bytes: int
    gpus_per_node: int
    cpu: bool = False
    native_fp4: bool = False
    """Blackwell-class FP4 tensor cores (NVFP4 / MXFP4 run natively)."""

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / GIB


PROFILES: dict[str, Hardware] = {
    h.name: h
    for h in (
        Hardware(
            name="gb10",
            memory_bytes=121 * GIB,
            unified=True,
            host_memory_bytes=121 * GIB,
            gpus_per_node=1,
            native_fp4=True,
        ),
        Hardware(
            name="gh200", memory_bytes=96 * GB, unified=False, host_memory_bytes=480 * GB, gpus_per_node=1
        ),
        Hardware(
            name="b300",
            memory_bytes=288 * GB,
            unified=False,
            host_memory_bytes=2048 * GB,
            gpus_per_node=8,
            native_fp4=True,
        ),
        Hardware(
            name="b200",
            memory_bytes=180 * GB,
            unified=False,
            host_memory_bytes=2048 * GB,
            gpus_per_node=8,
            native_fp4=True,
        ),
        Hardware(
            name="h200", memory_bytes=141 * GB, unified=False, host_memory_bytes=2048 * GB, gpus_per_node=8
        ),
        Hardware(
            name="h100", memory_bytes=80 * GB, unified=False, host_memory_bytes=2048 * GB, gpus_per_node=8
        ),
        Hardware(
            name="rtx-pro-6000",
            memory_bytes=96 * GB,
            unified=False,
            host_memory_bytes=256 * GB,
            gpus_per_node=4,
            native_fp4=True,
        ),
        Hardware(
            name="rtx-3090", memory_bytes=24 * GB, unified=False, host_memory_bytes=128 * GB, gpus_per_node=2
        ),
    )
}


def resolve(name: str, gpu_memory_gib: float | None = None) -> Hardware:
    """A profile by name, ``local`` (detected), ``cpu`` (vLLM-CPU on this host), or ``custom``."""
    if name == "custom":
        if gpu_memory_gib is None or gpu_memory_gib <= 0:
            raise ConfigError("--hardware custom needs --gpu-memory-gib")
        mem = int(gpu_memory_gib * GIB)
        return Hardware(
            name="custom", memory_bytes=mem, unified=False, host_memory_bytes=mem, gpus_per_node=1
        )
    if name == "local":
        return detect_local()
    if name == "cpu":
        return cpu_host()
    if name not in PROFILES:
        raise ConfigError(
            f"--hardware: unknown profile {name!r}; known: local, cpu, custom, {', '.join(PROFILES)}"
        )
    profile = PROFILES[name]
    if gpu_memory_gib is not None:
        profile = profile.model_copy(update={"memory_bytes": int(gpu_memory_gib * GIB)})
    return profile


def parse_stage(text: str) -> tuple[Hardware, int]:
    """``rtx-3090x2`` -> (the rtx-3090 profile, 2 accelerators in that stage)."""
    match = re.fullmatch(r"(.+?)x(\d+)", text.strip())
    if not match:
        raise ConfigError(f"--stage-hardware: {text!r} is not NAMExCOUNT (e.g. gb10x2)")
    return resolve(match.group(1)), int(match.group(2))


def _meminfo_bytes(key: str) -> int:
    with open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise HardwareError(f"/proc/meminfo has no {key}")


def cpu_host() -> Hardware:
    """This host as vLLM-CPU sees it: weights and KV cache in host RAM."""
    host = _meminfo_bytes("MemTotal")
    return Hardware(
        name="cpu", memory_bytes=host, unified=True, host_memory_bytes=host, gpus_per_node=1, cpu=True
    )


def cpu_has_flag(flag: str) -> bool:
    """Whether this host's CPU advertises ``flag`` in /proc/cpuinfo (``avx512_bf16``, ``amx_tile``)."""
    try:
        with open("/proc/cpuinfo") as fh:
            return any(flag in line.split() for line in fh if line.startswith("flags"))
    except OSError:
        return False


def detect_local() -> Hardware:
    """The local accelerators through nvidia-smi; a CPU-only host becomes the ``cpu`` profile."""
    if shutil.which("nvidia-smi") is None:
        return cpu_host()
    host = _meminfo_bytes("MemTotal")
    try:
        text = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
            env=child_environ({"LC_ALL": "C"}),
        ).stdout
    except (subprocess.SubprocessError, OSError) as exc:
        raise HardwareError(f"nvidia-smi failed: {exc}") from None
    rows = [line.rsplit(",", 1) for line in text.strip().splitlines() if "," in line]
    if not rows:
        return cpu_host()
    name = rows[0][0].strip()
    unified = "GB10" in name or rows[0][1].strip() in ("[N/A]", "N/A")
    memory = host if unified else int(float(rows[0][1])) * 1024**2
    return Hardware(
        name=name, memory_bytes=memory, unified=unified, host_memory_bytes=host, gpus_per_node=len(rows)
    )
