"""Issue 42 item 7: ``sync`` never copies a checkpoint into itself (DEST inside SRC) nor over its own source
(SRC inside DEST); both are bad input (exit 2) before anything is written, as convert refuses them."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.clirun import invoke


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.mark.parametrize("where", ["sub", "sub/deeper", ".", "local:sub"])
def test_a_dest_inside_src_is_refused_and_nothing_is_copied(tmp_path: Path, where: str) -> None:
    src = tmp_path / "ck" / "nz"
    src.mkdir(parents=True)
    (src / "config.json").write_text("{}")
    before = _files(src)
    dest = f"local:{src / where[6:]}" if where.startswith("local:") else str(src / where)
    result = invoke(["sync", str(src), dest])
    assert result.code == 2 and "must not be SRC or lie inside it" in result.output, result.output
    assert _files(src) == before  # no sub/, no sub/sub/ after it


def test_a_dest_that_holds_src_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "ck" / "nz"
    src.mkdir(parents=True)
    (src / "config.json").write_text("{}")
    result = invoke(["sync", str(src), str(tmp_path / "ck")])
    assert result.code == 2 and "holds SRC" in result.output, result.output
    assert _files(tmp_path / "ck") == ["nz", "nz/config.json"]
