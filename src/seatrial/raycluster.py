"""Ray, for the commands that reach a cluster (``bench --ray``, ``hw --ray``, ``doctor --ray``): joining
it (on loopback when the address is), after a TCP connect to the address proves something listens there
(within 5 s: ``ray.init`` itself can wait for minutes on an address where nothing answers); and one
function run on each chosen alive node, pinned there by node affinity (not soft), all of them under one
deadline, each node's answer or why it gave none.

The address is a running cluster's head, ``HOST:PORT`` (or ``ray://HOST:PORT``): ``local`` and ``auto``
are refused, since Ray would start a cluster of its own on every interface, or join whichever one its
temp folder names."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from seatrial.errors import ConfigError, ServerError

CONNECT_TIMEOUT_S = 5.0
DEFAULT_PORT = 6379


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError("--ray needs Ray: pip install 'seatrial[ray]'") from None
    return ray


def head_of(address: str) -> tuple[str, int]:
    """(host, port) of ``HOST:PORT``, ``ray://HOST:PORT``, ``[V6]:PORT`` or ``HOST`` (port 6379);
    ConfigError for ``local``, ``auto`` or anything else that names no head."""
    text = address.strip()
    if text.lower() in ("", "local", "auto"):
        raise ConfigError(f"--ray {address!r}: give the head of a running cluster as HOST:PORT (`ray start --head` "
                          "prints it); seatrial does not start a cluster of its own")  # fmt: skip
    rest = text.split("://", 1)[1] if "://" in text else text
    host, colon, port = rest.rpartition(":") if rest.rfind(":") > rest.rfind("]") else (rest, "", "")
    host = host.strip("[]")
    try:
        number = int(port) if colon else DEFAULT_PORT
    except ValueError:
        raise ConfigError(f"--ray {address!r}: the port {port!r} is not a number") from None
    if not host or not 0 < number < 65536:
        raise ConfigError(f"--ray {address!r}: expected HOST:PORT")
    return host, number


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """ServerError (exit 4) unless a TCP connect to the head succeeds within ``timeout_s``."""
    host, port = head_of(address)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return
    except OSError as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
        raise ServerError(
            f"--ray {address}: nothing accepts a connection at {host}:{port} within {timeout_s:.0f} s ({why}); "
            "is the cluster's head running there?"
        ) from None


def connect_ray(address: str) -> Any:
    """Join the Ray cluster at ``address`` (already joined: reuse it). A loopback address keeps Ray on
    loopback (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read when Ray is first imported)."""
    host, _ = head_of(address)
    if host in ("127.0.0.1", "localhost", "::1"):
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    ray = _ray()
    if not ray.is_initialized():
        check_reachable(address)
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
    """``fn(*args_of(node))`` as one task on each node, all at once and under one deadline (``timeout_s``
    for all of them together, not each); per node (node, answer, None), or (node, None, why) when it gave
    none in time (its task is cancelled) or failed. ``gpus``: the task holds the node's GPUs."""
    ray = _ray()
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(fn)
    refs = [task.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False), num_cpus=0,
                         num_gpus=n["Resources"].get("GPU", 0) if gpus else 0, max_retries=0).remote(*args_of(n))
            for n in nodes]  # fmt: skip
    done, late = ray.wait(refs, num_returns=len(refs), timeout=timeout_s) if refs else ([], [])
    for ref in late:
        ray.cancel(ref, force=True)
    finished = set(done)
    out: list[tuple[dict[str, Any], Any, str | None]] = []
    for n, ref in zip(nodes, refs, strict=True):
        if ref not in finished:
            out.append((n, None, f"did not answer within {timeout_s:.0f} s (cancelled)"))
            continue
        try:
            out.append((n, ray.get(ref, timeout=0), None))
        except Exception as exc:  # a node that fails is the caller's to judge, not a crash
            first = str(exc).splitlines()[0] if str(exc) else ""
            out.append((n, None, f"{type(exc).__name__}: {first}"))
    return out
