"""The audit's compiled loops (_columns.c) against the Python loops that define them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.compiled import compiled_or_skip

from seatrial.checkpoint import audit, native
from seatrial.checkpoint.digest import _group_ids, names_hash
from seatrial.checkpoint.index import index_fingerprints

# Names made of the pieces that matter to templates and layers: digits, a literal '#', ".layers.", dots.
_PIECES = st.sampled_from(["model", ".layers.", ".", "0", "7", "12", "#", "mlp", "é", "weight", "x1"])
_NAMES = st.lists(st.lists(_PIECES, max_size=8).map("".join), unique=True, max_size=40)


def _compiled() -> None:
    compiled_or_skip(native.COLUMNS is not None, "the audit's compiled loops (_columns.c)")


@settings(max_examples=300, deadline=None)
@given(_NAMES, st.data())
def test_compiled_grouping_equals_the_python_loop(names: list[str], data: st.DataObject) -> None:
    _compiled()
    assert native.COLUMNS is not None
    dtypes = [data.draw(st.sampled_from(["BF16", "F8_E4M3", "U8"])) for _ in names]
    ids = np.empty(len(names), dtype=np.int64)
    first, name_hash = native.COLUMNS.groups(names, dtypes, ids)
    want_ids, want_first = _group_ids(names, dtypes) if names else (np.empty(0, np.int64), [])
    np.testing.assert_array_equal(ids, want_ids)
    assert first == want_first
    assert name_hash == names_hash(names)


def test_layers_are_found_as_the_python_loop_finds_them() -> None:
    _compiled()
    assert native.COLUMNS is not None
    names = [
        "m.layers.3.w", "m.layers.4.w",  # one template, two layers
        "m.layers.3x.w", "m.layers.4x.w",  # not a layer: the run is not followed by '.'
        "m.layers.#.w", "m.layers.5.w",  # a literal '#' has the digits' template, but is not their layer
        "a#.w", "a1.w",  # same template
    ]  # fmt: skip
    ids = np.empty(len(names), dtype=np.int64)
    first, _ = native.COLUMNS.groups(names, ["BF16"] * len(names), ids)
    assert ids.tolist() == [0, 1, 2, 2, 3, 4, 5, 5]
    assert first == [0, 1, 2, 4, 5, 6]
    np.testing.assert_array_equal(ids, _group_ids(names, ["BF16"] * len(names))[0])


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.text(max_size=6), st.sampled_from(["a.safetensors", "b.safetensors", "c"]), max_size=30
    )
)
def test_compiled_index_fingerprints_equal_the_python_loop(weight_map: dict[str, str]) -> None:
    _compiled()
    assert native.COLUMNS is not None
    assert native.COLUMNS.fingerprints(weight_map) == index_fingerprints(weight_map)
    assert native.COLUMNS.fingerprints({**weight_map, "bad": 3}) is None


def test_audit_report_is_the_same_without_the_compiled_loops(
    seed000: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _compiled()
    compiled = audit(seed000).model_dump()
    monkeypatch.setattr(native, "COLUMNS", None)
    assert audit(seed000).model_dump() == compiled
