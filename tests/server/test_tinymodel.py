"""The tiny model the demo and the engine tests serve: every row of its vocabulary is a token of its
tokenizer (give or take the rounding to 64), so that a random-weight model's answers carry text."""

from __future__ import annotations

import json
from pathlib import Path


def test_every_row_of_the_tiny_models_vocabulary_is_nearly_always_a_token(tiny_model: Path) -> None:
    tok = json.loads((tiny_model / "tokenizer.json").read_text())
    ids = set(tok["model"]["vocab"].values()) | {t["id"] for t in tok["added_tokens"]}
    assert ids == set(range(len(ids)))  # the tokenizer's ids are 0..n-1
    rows = json.loads((tiny_model / "config.json").read_text())["vocab_size"]
    assert rows % 64 == 0 and len(ids) <= rows < len(ids) + 64, (rows, len(ids))
