# The compiled per-tensor loop of _columns.c (see header.py, which wraps it).
from typing import Any

from typing_extensions import Buffer

def columns(
    doc: dict[str, Any], bits_of: dict[str, int], out: Buffer, /
) -> tuple[list[str], list[list[int]]] | None: ...
def groups(names: list[str], dtypes: list[str], ids: Buffer, /) -> tuple[list[int], int]: ...
def fingerprints(weight_map: dict[str, Any], /) -> dict[str, tuple[int, int]] | None: ...
