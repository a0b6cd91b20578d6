"""Interruptions that clean up: SIGTERM and SIGHUP turned into the KeyboardInterrupt that Ctrl-C raises (so
the same clean-up runs: every rsync stream stopped, every server of an experiment stopped), and a clean-up
that a second signal cannot cut short. Signal handlers live in the main thread only; elsewhere these
change nothing."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

TERMINATING = (signal.SIGTERM, signal.SIGHUP)
STOPPING = (signal.SIGINT, *TERMINATING)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _raise(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"{signal.Signals(signum).name}")


@contextlib.contextmanager
def terminations_interrupt() -> Iterator[None]:
    """Inside: SIGTERM and SIGHUP raise KeyboardInterrupt, as SIGINT does."""
    if not _main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise) for sig in TERMINATING}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def shielded() -> Iterator[list[int]]:
    """Inside: SIGINT, SIGTERM and SIGHUP are noted (in the yielded list), not acted on, so that a
    second Ctrl-C cannot abort the stop of what the first one asked to stop."""
    noted: list[int] = []
    if not _main_thread():
        yield noted
        return
    previous = {sig: signal.signal(sig, lambda s, f: noted.append(s)) for sig in STOPPING}
    try:
        yield noted
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
