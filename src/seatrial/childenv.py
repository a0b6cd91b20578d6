"""Variables seatrial sets for itself, kept out of the processes it starts (servers, the guarded command).

``quiet_blas`` gives numpy's OpenBLAS one thread (at import it starts a thread per core that spins:
about 130 ms of CPU on a 2-core host, taken from the command itself; seatrial does no BLAS work). It is set
at start-up, before anything imports numpy, so a command that never needs numpy never pays for it.
``quiet_plugins`` keeps pydantic from scanning every installed distribution's entry points for plugins
when the first model is built (about 20 ms of every command's start with torch and Ray installed; seatrial
uses none). :func:`child_environ` is the environment of a child without what seatrial set, with NVLink
multicast off (:data:`SAFE_NCCL_ENV`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

_SET: dict[str, str] = {}

#: NVLink multicast (NVLS, symmetric-memory multicast, NVSHMEM's NVLS) stays off in every child seatrial
#: starts (engines, the guarded command, collective workers): on shared hosts it can take the GPUs out of
#: service. An inherited value is overridden; only a caller's explicit ``extra`` (a server's own ``env``) wins.
SAFE_NCCL_ENV: dict[str, str] = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def quiet_blas() -> None:
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = _SET["OPENBLAS_NUM_THREADS"] = "1"


def quiet_plugins() -> None:
    if "PYDANTIC_DISABLE_PLUGINS" not in os.environ:
        os.environ["PYDANTIC_DISABLE_PLUGINS"] = _SET["PYDANTIC_DISABLE_PLUGINS"] = "__all__"


def child_environ(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment less the variables seatrial set for itself, with :data:`SAFE_NCCL_ENV`,
    plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if _SET.get(k) != v}
    return {**env, **SAFE_NCCL_ENV, **(extra or {})}
