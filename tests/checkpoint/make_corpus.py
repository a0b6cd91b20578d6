"""Regenerate the hostile-header corpus: ``python tests/checkpoint/make_corpus.py``.

Each file is a malformed or hostile safetensors file that the reader must reject with a
CheckpointError naming it. Fuzzing failures found later are added here as files too.
"""

from __future__ import annotations

import struct
from pathlib import Path

import orjson

CORPUS = Path(__file__).parent / "corpus"


def _file(header: bytes, data: int = 0, declared: int | None = None) -> bytes:
    n = len(header) if declared is None else declared
    return struct.pack("<Q", n) + header + b"\0" * data


def _entry(
    dtype: str = "F32", shape: list[int] | None = None, offsets: list[int] | None = None
) -> dict[str, object]:
    return {"dtype": dtype, "shape": shape if shape is not None else [2], "data_offsets": offsets or [0, 8]}


CASES: dict[str, bytes] = {
    "empty.safetensors": b"",
    "short.safetensors": b"\x01\x02\x03",
    "length_past_end.safetensors": _file(b"{}", declared=1 << 40),
    "length_huge.safetensors": struct.pack("<Q", (1 << 64) - 1) + b"{}",
    "invalid_json.safetensors": _file(b'{"a": {"dtype": "F32",'),
    "invalid_utf8.safetensors": _file(b'{"\xff\xfe": 1}'),
    "not_object.safetensors": _file(b"[1, 2, 3]"),
    "entry_not_object.safetensors": _file(b'{"a": 5}'),
    "unknown_dtype.safetensors": _file(orjson.dumps({"a": _entry(dtype="F7")}), 8),
    "negative_dim.safetensors": _file(orjson.dumps({"a": _entry(shape=[-2])}), 8),
    "float_dim.safetensors": _file(orjson.dumps({"a": _entry(shape=[2.0])}), 8),
    "bool_offset.safetensors": _file(
        b'{"a": {"dtype": "U8", "shape": [1], "data_offsets": [false, true]}}', 8
    ),
    "offsets_reversed.safetensors": _file(orjson.dumps({"a": _entry(offsets=[8, 0])}), 8),
    "offsets_out_of_range.safetensors": _file(orjson.dumps({"a": _entry(offsets=[0, 8])}), 4),
    "size_mismatch.safetensors": _file(orjson.dumps({"a": _entry(shape=[3])}), 8),
    "overlap.safetensors": _file(
        orjson.dumps({"a": _entry(offsets=[0, 8]), "b": _entry(offsets=[4, 12])}), 12
    ),
    "huge_shape.safetensors": _file(orjson.dumps({"a": _entry(shape=[1 << 62, 1 << 62])}), 8),
    "bad_metadata.safetensors": _file(orjson.dumps({"__metadata__": {"k": 1}, "a": _entry()}), 8),
    "offsets_three.safetensors": _file(
        orjson.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4, 8]}}), 8
    ),
    "shape_nested.safetensors": _file(
        orjson.dumps({"a": {"dtype": "F32", "shape": [[2]], "data_offsets": [0, 8]}}), 8
    ),
}


def main() -> None:
    CORPUS.mkdir(exist_ok=True)
    for name, content in CASES.items():
        (CORPUS / name).write_bytes(content)


if __name__ == "__main__":
    main()
