"""Put first on the PYTHONPATH of a tiny local vLLM that seatrial starts fast (``server/engine.py``'s
FAST_START_ENV: the demo, the tests, the benchmarks), so that Python runs it at start-up. Two changes, each
to how the process starts, none to what vLLM computes or serves:

- The young generation's collection threshold goes from 700 to 100,000 allocations: importing vLLM
  allocates millions of objects that live for the whole process, and collecting them every 700
  allocations slows the import. Garbage that forms cycles is still collected, in fewer, larger sweeps.
- The engine-core process is forked from the API server instead of spawned. vLLM's CPU platform asks for
  ``spawn`` (for the OpenMP core binding of worker processes, which the uni executor of a fast start does
  not have), and a spawned engine core imports vLLM a second time, ~8 s here. ``fork`` is what vLLM itself
  uses on a GPU host whenever CUDA is not yet initialised in the API server.

benchmarks/engine_start.py measures the whole start with and without this file (evidence/).
A ``sitecustomize`` further along the path (a distribution's own) still runs after this one."""

import gc
import importlib.machinery
import importlib.util
import multiprocessing
import multiprocessing.context
import os
import sys

gc.set_threshold(100_000, 50, 100)

_get_context = multiprocessing.get_context


def _fork_for_spawn(method: str | None = None) -> multiprocessing.context.BaseContext:
    """``multiprocessing.get_context`` with ``spawn`` answered by ``fork``."""
    return _get_context("fork" if method == "spawn" else method)


multiprocessing.get_context = _fork_for_spawn  # type: ignore[assignment]  # (an overloaded function there)


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[__name__] = module
        spec.loader.exec_module(module)


_chain()
