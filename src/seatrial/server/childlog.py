"""A child's output written to its log line by line, each line through :func:`seatrial.runs.redact.redact_text`.

An engine prints its own arguments and environment (vLLM logs its non-default args, ``api_key`` included):
what seatrial writes of it holds none of the secrets seatrial knows. The secrets of the child's command
line (``--api-key X``, ``HF_TOKEN=X``) and environment (variables named or shaped like a secret) are
remembered before it starts, so that its first line is already clean.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from seatrial.runs.redact import redact_text, remember_argv, remember_env


class RedactedLog:
    """Copies ``stream`` (the child's stdout and stderr, a pipe) to ``path`` (appended) from a thread until
    every writer has closed it; the thread owns the file."""

    def __init__(self, path: Path, argv: Sequence[str], env: Mapping[str, str]) -> None:
        remember_argv(argv)
        remember_env(env)
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[bytes] = open(path, "ab")  # noqa: SIM115
        self._thread: threading.Thread | None = None

    def follow(self, stream: IO[bytes]) -> None:
        self._thread = threading.Thread(target=self._copy, args=(stream,), name="child-log", daemon=True)
        self._thread.start()

    def _copy(self, stream: IO[bytes]) -> None:
        try:
            for raw in iter(stream.readline, b""):
                line = raw.decode(errors="surrogateescape")
                self._fh.write(redact_text(line).encode(errors="surrogateescape"))
                self._fh.flush()
        finally:
            stream.close()
            self._fh.close()

    def drain(self, timeout_s: float) -> None:
        """Wait (at most ``timeout_s``) until the child's last line is written; closes the file when the
        child was never followed."""
        if self._thread is None:
            self._fh.close()
        else:
            self._thread.join(timeout_s)
