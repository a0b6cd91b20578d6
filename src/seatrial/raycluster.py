"""Ray, for the commands that reach a cluster (``bench --ray``, ``hw --ray``, ``doctor --ray``): joining
it (on loopback when the address is), and one function run on each chosen alive node, pinned there by
node affinity (not soft), each node's answer or why it gave none."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from seatrial.errors import ConfigError, ServerError


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'seatrial[ray]'") from None
    return ray


def connect_ray(address: str) -> Any:
    """Join the Ray cluster at ``address`` (already joined: reuse it). A loopback address keeps Ray on
    loopback (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read when Ray is first imported)."""
    if address.split(":")[0] in ("127.0.0.1", "localhost"):
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = _ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, logging_level="ERROR", log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ServerError(f"--ray {address}: cannot join the Ray cluster: {exc}") from None
    return ray


def alive_nodes(address: str) -> list[dict[str, Any]]:
    """The cluster's alive nodes (``ray.nodes()`` entries), after joining it."""
    return [n for n in connect_ray(address).nodes() if n["Alive"]]


def on_each_node(
    nodes: list[dict[str, Any]],
    fn: Callable[..., Any],
    args_of: Callable[[dict[str, Any]], tuple[Any, ...]],
    timeout_s: float,
    gpus: bool = False,
) -> list[tuple[dict[str, Any], Any, str | None]]:
    """``fn(*args_of(node))`` as one task on each node, all at once; per node (node, answer, None), or
    (node, None, why) when it gave none within ``timeout_s``. ``gpus``: the task holds the node's GPUs."""
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(fn)
    refs = [task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False), num_cpus=0,
                         num_gpus=n["Resources"].get("GPU", 0) if gpus else 0, max_retries=0).remote(*args_of(n))
            for n in nodes]  # fmt: skip
    out: list[tuple[dict[str, Any], Any, str | None]] = []
    for n, ref in zip(nodes, refs, strict=True):
        try:
            out.append((n, ray.get(ref, timeout=timeout_s), None))
        except Exception as exc:  # a node that does not answer is the caller's to judge, not a crash
            first = str(exc).splitlines()[0] if str(exc) else ""
            out.append((n, None, f"{type(exc).__name__}: {first}"))
    return out
