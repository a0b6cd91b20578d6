"""Raw safetensors reads: the mapped view equals the copied read, at any row offset."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from seatrial.checkpoint.convert.stio import iter_row_blocks, map_rows, read_entries, read_rows
from seatrial.errors import CheckpointError


def _file(tmp_path: Path) -> Path:
    gen = torch.Generator().manual_seed(3)
    tensors = {  # odd row widths put most blocks at offsets that are not page-aligned
        "a": torch.randn(7, 3, generator=gen).to(torch.bfloat16),
        "b": torch.randn(5000, 37, generator=gen).to(torch.bfloat16),
        "c": torch.randn(1000, 13, generator=gen),
    }
    path = tmp_path / "x.safetensors"
    save_file(tensors, str(path))
    return path


@pytest.mark.parametrize("chunk_bytes", [1, 4096, 10_007, 1 << 20])
def test_map_rows_equals_read_rows_for_every_block(tmp_path: Path, chunk_bytes: int) -> None:
    path = _file(tmp_path)
    entries, _ = read_entries(path)
    with path.open("rb") as fh:
        for entry in entries.values():
            for start, stop in iter_row_blocks(entry, chunk_bytes):
                mapped = map_rows(fh, entry, start, stop)
                assert mapped.dtype == read_rows(fh, entry, start, stop).dtype
                np.testing.assert_array_equal(mapped, read_rows(fh, entry, start, stop))
                assert not mapped.flags.writeable


def test_map_rows_refuses_a_source_truncated_after_its_header_was_read(tmp_path: Path) -> None:
    path = _file(tmp_path)
    entries, _ = read_entries(path)
    entry = entries["c"]
    with path.open("r+b") as fh:
        fh.truncate(entry.end - 4)
        assert map_rows(fh, entry, 0, entry.rows - 1).shape == (entry.rows - 1, 13)
        with pytest.raises(CheckpointError, match="short read in tensor 'c'"):
            map_rows(fh, entry, 0, entry.rows)


def test_writer_starts_writeback_of_each_large_block_at_its_offset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from seatrial.checkpoint.convert import stio

    calls: list[tuple[int, int, int]] = []
    monkeypatch.setattr(
        os, "posix_fadvise", lambda fd, offset, length, advice: calls.append((offset, length, advice))
    )
    blocks = [b"h" * 24, np.full(stio.WRITEBACK_BYTES, 7, np.uint8), b"s" * 10, np.ones(3 << 20, np.uint8)]
    with (tmp_path / "out").open("wb") as fh:
        writer = stio.HashingWriter(fh)
        for block in blocks:
            writer.write_async(block) if isinstance(block, np.ndarray) else writer.write(block)
            writer.drain()
    big = stio.WRITEBACK_BYTES
    assert calls == [(24, big, os.POSIX_FADV_DONTNEED), (24 + big + 10, 3 << 20, os.POSIX_FADV_DONTNEED)]
    assert writer.written_bytes == (tmp_path / "out").stat().st_size == 24 + big + 10 + (3 << 20)


CORPUS = sorted((Path(__file__).parents[1] / "checkpoint" / "corpus").iterdir())


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_convert_reads_headers_through_the_one_reader(path: Path) -> None:
    """Issue 16 item 2: convert accepted what audit rejects (negative dims); now every file of the
    header fuzz corpus is refused by convert's reader exactly as by audit's, naming the file."""
    with pytest.raises(CheckpointError) as info:
        read_entries(path)
    assert str(path) in str(info.value)
