"""What a client worker is handed for one level (:class:`WorkerShare`) and what it hands back: each record
with where its clock stood (:class:`WorkerClock`), and once its share is sent, its :class:`WorkerStats`.

A share crosses a process (a pipe) or a node (Ray) pickled: :func:`pack` pickles every share of a level
before any worker is sent one, so a share that cannot go is a clear error naming the worker and the field,
not a traceback at a worker (nor a level whose other workers already began)."""

from __future__ import annotations

import pickle
from typing import Any

from pydantic import BaseModel, ConfigDict

from seatrial.errors import ConfigError
from seatrial.load.client import Endpoint
from seatrial.load.records import Phase
from seatrial.load.scheduler import LevelLoad
from seatrial.load.settings import Stamps
from seatrial.load.workloads import RequestSpec


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sending(_Model):
    """What every worker of a level sends alike: where, with which timeouts and time stamps, and how its
    requests are named (``<id_prefix>-<level-wide index>``) and placed (``phase``, the run's ``level``)."""

    endpoint: Endpoint
    timeout_s: float
    stall_timeout_s: float
    stamps: Stamps
    phase: Phase
    id_prefix: str
    level: int


class WorkerShare(_Model):
    """One worker's part of a level (``load.distributed.split``): its ``load`` (its users, or its part of
    the open loop's cap; its arrivals' offsets from the common start; its specs' level-wide ``indices``),
    its ``specs``, what every worker sends alike, and its clock's offset to the driver's (worker wall −
    driver wall)."""

    worker: int
    load: LevelLoad
    specs: list[RequestSpec]
    sending: Sending
    wall_offset_ns: int = 0

    @property
    def indices(self) -> list[int]:
        """The level-wide index of each of its specs."""
        return self.load.indices or list(range(len(self.specs)))


class WorkerClock(_Model):
    """Where a worker's ``perf_counter`` clock stood during a level: ``mono_to_wall_ns`` (its wall clock −
    its perf_counter) and ``start_ns`` (the common start, on its perf_counter)."""

    mono_to_wall_ns: int
    start_ns: int


class WorkerStats(_Model):
    """What a worker says once its share is sent: its in-flight timeline (``events``: perf_counter ns, +1
    or -1), its loop's lateness (every tick, ``late_ms``, and their p99 and max; its run-queue wait), its
    CPU and how late it began after the common start."""

    worker: int
    requests: int
    events: list[tuple[int, int]]
    cpu_s: float
    mono_to_wall_ns: int
    loop_lag_ms_p99: float | None = None
    loop_lag_ms_max: float | None = None
    cpu_wait_ms: float | None = None
    late_ms: list[float] = []
    start_late_ms: float = 0.0


def pack(shares: list[WorkerShare]) -> dict[int, bytes]:
    """Every share pickled, by worker; a ConfigError naming the worker and the field when one does not."""
    out = {}
    for share in shares:
        try:
            out[share.worker] = pickle.dumps(share, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # pickle raises TypeError, AttributeError, PicklingError, ...
            raise ConfigError(
                f"the share of client worker {share.worker} cannot be sent to it: {_where(share)} does not "
                f"pickle ({type(exc).__name__}: {exc}); no worker was sent its share"
            ) from exc
    return out


def _where(share: WorkerShare) -> str:
    """What of ``share`` does not pickle; in a spec, with the request it is."""
    path = _culprit(share)
    if path.startswith("specs["):
        i = int(path[len("specs[") : path.index("]")])
        path += f" (request {share.sending.id_prefix}-{share.indices[i]:05d})"
    return path


def unpack(data: bytes) -> WorkerShare:
    share = pickle.loads(data)
    if not isinstance(share, WorkerShare):
        raise TypeError(f"a worker was handed a {type(share).__name__}, not a WorkerShare")
    return share


def _culprit(value: Any, path: str = "") -> str:
    """The innermost part of ``value`` (through models, dataclasses, lists and dicts) that does not pickle,
    as a path (``specs[3].prompt``); dict keys by name, never a value."""
    if isinstance(value, dict):
        parts = [(f"{path}[{k!r}]", v) for k, v in value.items()]
    elif isinstance(value, list | tuple):
        parts = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    elif hasattr(value, "__dict__"):
        parts = [(f"{path}.{k}" if path else k, v) for k, v in vars(value).items()]
    else:
        parts = []
    for where, part in parts:
        if not _pickles(part):
            return _culprit(part, where)
    return path or "the share"


def _pickles(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True
