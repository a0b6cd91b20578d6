"""The header reader: real files agree with the safetensors library; hostile files give clear errors."""

from __future__ import annotations

import itertools
import struct
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.numpy import save_file
from tests.ckptgen.layouts import fp8_block_deepseek, nvfp4_compressed_tensors
from tests.ckptgen.writer import header_bytes, write_safetensors
from tests.compiled import compiled_or_skip

from seatrial.checkpoint import header, native
from seatrial.checkpoint.header import read_header
from seatrial.errors import CheckpointError

CORPUS = sorted((Path(__file__).parent / "corpus").iterdir())


def test_reads_a_file_written_by_safetensors(tmp_path: Path) -> None:
    path = tmp_path / "real.safetensors"
    save_file({"a": np.zeros((3, 5), np.float32), "b": np.ones(7, np.int8)}, str(path), metadata={"k": "v"})
    h = read_header(path)
    assert h.metadata == {"k": "v"}
    assert h.tensors["a"].dtype == "F32" and h.tensors["a"].shape == (3, 5) and h.tensors["a"].nbytes == 60
    assert h.tensors["b"].nbytes == 7
    assert h.data_bytes == 67


def test_generator_files_open_in_safetensors(tmp_path: Path) -> None:
    path = tmp_path / "gen.safetensors"
    specs = nvfp4_compressed_tensors("m.experts.0.up_proj", 64, 128) + fp8_block_deepseek(
        "m.q_proj", 300, 200
    )
    data = write_safetensors(path, specs)
    with safe_open(str(path), "np") as f:
        assert sorted(f.keys()) == sorted(s.name for s in specs)
    h = read_header(path)
    assert int(h.nbytes.sum()) == data == path.stat().st_size - 8 - h.header_bytes
    assert h.tensors["m.q_proj.weight_scale_inv"].shape == (3, 2)


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_corpus_is_rejected_naming_the_file(path: Path) -> None:
    with pytest.raises(CheckpointError) as info:
        read_header(path)
    assert str(path) in str(info.value) and info.value.path == str(path)


def test_overlap_message_names_both_tensors(tmp_path: Path) -> None:
    path = Path(__file__).parent / "corpus" / "overlap.safetensors"
    with pytest.raises(CheckpointError, match="tensors 'a' and 'b' overlap"):
        read_header(path)


def test_names_that_look_like_json_keywords_still_parse(tmp_path: Path) -> None:
    path = tmp_path / "t.safetensors"
    raw = orjson.dumps({"true.false": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]}})
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0\0")
    assert read_header(path).tensors["true.false"].nbytes == 2


def test_header_padding_matches_safetensors(tmp_path: Path) -> None:
    head = header_bytes([])
    assert len(head) % 8 == 0 and head.startswith(struct.pack("<Q", len(head) - 8))


_VALID = orjson.dumps(
    {"w": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [0, 8]}, "__metadata__": {"a": "b"}}
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.data())
def test_fuzzed_headers_never_escape_as_other_exceptions(tmp_path: Path, data: st.DataObject) -> None:
    """Mutate a valid header (bytes flipped, cut, length changed): only CheckpointError may escape."""
    raw = bytearray(_VALID)
    for _ in range(data.draw(st.integers(0, 4))):
        if raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    raw = raw[: data.draw(st.integers(0, len(raw)))] if data.draw(st.booleans()) else raw
    declared = len(raw) + data.draw(st.integers(-3, 3))
    body = struct.pack("<Q", max(declared, 0)) + bytes(raw) + b"\0" * data.draw(st.integers(0, 12))
    path = tmp_path / "fuzz.safetensors"
    path.write_bytes(body)
    try:
        h = read_header(path)
    except CheckpointError as exc:
        assert str(path) in str(exc)
    else:
        assert int(h.nbytes.sum()) <= h.data_bytes


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(
        st.text(max_size=8),
        st.fixed_dictionaries(
            {
                "dtype": st.sampled_from(["F32", "BF16", "U8", "F4", "X9", 3]),
                "shape": st.one_of(st.lists(st.integers(-2, 6), max_size=3), st.text(max_size=2)),
                "data_offsets": st.lists(st.one_of(st.integers(-4, 40), st.floats(0, 9)), max_size=3),
            }
        ),
        max_size=4,
    ),
    st.integers(0, 48),
)
def test_fuzzed_json_entries(tmp_path: Path, doc: dict[str, object], data_bytes: int) -> None:
    """Arbitrary entries: either a consistent header or a CheckpointError, never a traceback."""
    raw = orjson.dumps(doc)
    path = tmp_path / "entries.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * data_bytes)
    try:
        h = read_header(path)
    except CheckpointError as exc:
        assert exc.path == str(path)
    else:
        spans = sorted(zip(h.begins.tolist(), h.ends.tolist(), strict=True))
        assert all(b2 >= e1 for (_, e1), (b2, _) in itertools.pairwise(spans))
        assert all(e <= data_bytes for _, e in spans)


_ENTRY_VALUES = st.one_of(
    st.integers(-3, 2**70), st.booleans(), st.floats(0, 9), st.text(max_size=2), st.none()
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=6),
        st.one_of(
            st.fixed_dictionaries(
                {
                    "dtype": st.sampled_from(["F32", "BF16", "U8", "F4", "X9", 3, None]),
                    "shape": st.one_of(st.lists(_ENTRY_VALUES, max_size=3), st.text(max_size=2)),
                    "data_offsets": st.one_of(st.lists(_ENTRY_VALUES, max_size=3), st.none()),
                },
                optional={"extra": st.integers()},
            ),
            st.lists(st.integers(), max_size=2),
        ),
        max_size=5,
    )
)
def test_compiled_columns_equal_the_python_loop(doc: dict[str, object]) -> None:
    """The compiled per-tensor loop (_columns.c) accepts exactly what the Python loop accepts, with the same columns."""
    compiled_or_skip(native.COLUMNS is not None, "the compiled header loop (_columns.c)")
    compiled, plain = header._compiled_columns(doc), header._python_columns(doc)
    assert (compiled is None) == (plain is None)
    if compiled is not None and plain is not None:
        assert compiled[:2] == plain[:2]
        for got, want in zip(compiled[2:], plain[2:], strict=True):
            np.testing.assert_array_equal(got, want)
