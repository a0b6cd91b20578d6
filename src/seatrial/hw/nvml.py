"""A thin, fail-soft layer over nvidia-ml-py (``pynvml``).

Every reading goes through :func:`read`, which returns the value or an :class:`Unavailable`
carrying NVML's own reason (``NotSupported``, ``NoPermission`` ...). Verdict code treats an
Unavailable reading as UNAVAILABLE, never as FAIL, except ``GpuIsLost``, which is a hardware fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

INSTALL_HINT = "install the GPU extra: pip install 'seatrial[gpu]'"


@dataclass(frozen=True)
class Unavailable:
    """A reading NVML could not give; ``reason`` is NVML's error text, e.g. 'Not Supported'."""

    reason: str
    gpu_lost: bool = False

    def to_json(self) -> dict[str, str]:
        return {"unavailable": self.reason}


@dataclass(frozen=True)
class Nvml:
    """An initialised NVML: the module and how many devices it sees."""

    lib: ModuleType
    device_count: int

    def handle(self, index: int) -> Any:
        return self.lib.nvmlDeviceGetHandleByIndex(index)


def load_nvml() -> tuple[Nvml | None, str | None]:
    """Import and initialise NVML; return (Nvml, None) or (None, the reason it is unavailable)."""
    try:
        import pynvml
    except ImportError:
        return None, f"nvidia-ml-py is not installed ({INSTALL_HINT})"
    try:
        pynvml.nvmlInit()
        count = int(pynvml.nvmlDeviceGetCount())
    except pynvml.NVMLError as exc:
        return None, f"NVML could not start: {error_text(exc)}"
    return Nvml(lib=pynvml, device_count=count), None


def error_text(exc: BaseException) -> str:
    """NVML's error name and message, e.g. 'NVMLError_NotSupported: Not Supported'."""
    return f"{type(exc).__name__}: {exc}"


def read(fn: Callable[..., Any], *args: Any) -> Any:
    """Call an NVML function; return its value, or Unavailable with the reason on any NVML error."""
    try:
        return fn(*args)
    except Exception as exc:
        if not type(exc).__name__.startswith("NVMLError"):
            raise
        lost = "GpuIsLost" in type(exc).__name__
        return Unavailable(reason=f"{getattr(fn, '__name__', 'nvml')}: {error_text(exc)}", gpu_lost=lost)


def jsonable(value: Any) -> Any:
    """Turn a reading (value or Unavailable, possibly nested in dicts) into JSON-ready data."""
    if isinstance(value, Unavailable):
        return value.to_json()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return value


def unavailable_reason(value: Any) -> str | None:
    """The reason text if ``value`` (or its JSON form) is an unavailable reading, else None."""
    if isinstance(value, Unavailable):
        return value.reason
    if isinstance(value, dict) and set(value) == {"unavailable"}:
        return str(value["unavailable"])
    return None
