"""Put first on the PYTHONPATH of a tiny local vLLM that seatrial starts fast (``server/engine.py``'s
FAST_START_ENV: the demo, the tests, the benchmarks), so that Python runs it at start-up, in the API server
and in the engine-core process vLLM spawns. It raises the young generation's collection threshold from 700
to 100,000 allocations: importing vLLM (twice per start) allocates millions of objects that live for the
whole process, and collecting them every 700 allocations slows each import. benchmarks/engine_start.py
measures the whole start with and without it: ready in 17.5 s against 20.5 s on the 2-core host
(evidence/cpu-2026-12-04/). Garbage that forms cycles is still collected, only in fewer, larger sweeps.
A ``sitecustomize`` further along the path (a distribution's own) still runs after this one."""

import gc
import importlib.machinery
import importlib.util
import os
import sys

gc.set_threshold(100_000, 50, 100)


def _chain() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[__name__] = module
        spec.loader.exec_module(module)


_chain()
