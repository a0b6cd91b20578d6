"""The audit's compiled per-tensor loops (``_columns.c``), or None when the install had no C compiler.

Callers read ``native.COLUMNS`` at call time and fall back to their Python loop, which defines the
result; the tests run both.
"""

from __future__ import annotations

from types import ModuleType

try:
    from seatrial.checkpoint import _columns as _compiled

    COLUMNS: ModuleType | None = _compiled
except ImportError:  # installed without a C compiler
    COLUMNS = None
