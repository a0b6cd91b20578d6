"""Seed 000's byte arithmetic at full shape, from headers alone (sparse files: no disk is used).

Seed: total_size 177,598,883,320; PLE 128 x BF16 [2,500,012 x 160] = 102,400,491,520 bytes;
lm_head FP8 [248,320 x 2,560] with BF16 row scale [248,320 x 1]; after PLE -> FP8 (+2-byte scale)
and lm_head -> BF16: 127,033,840,122 bytes = 118.31 GiB.
"""

from __future__ import annotations

import json
from pathlib import Path

from seatrial.checkpoint.convert.layout import find_lm_head, source_outputs, table_outputs
from seatrial.checkpoint.convert.options import ConvertOptions
from seatrial.checkpoint.convert.prepare import size_after
from seatrial.checkpoint.convert.source import DEFAULT_EMBEDDING_PATTERN, find_tables, open_source
from seatrial.checkpoint.convert.stio import TensorSpec, encode_header

PLE = "model.language_model.ple.ple_embedding.ngram_embedding"
SEED_TOTAL = 177_598_883_320
SEED_AFTER = 127_033_840_122


def _sparse_file(path: Path, specs: list[TensorSpec]) -> None:
    header = encode_header(specs, {"format": "pt"})
    with path.open("wb") as fh:
        fh.write(header)
        fh.truncate(len(header) + sum(s.nbytes for s in specs))


def test_full_shape_plan_reproduces_the_seed_total(tmp_path: Path) -> None:
    ple = [TensorSpec(f"{PLE}.shard_{i}.weight", "BF16", (2_500_012, 160)) for i in range(128)]
    head = [
        TensorSpec("lm_head.weight", "F8_E4M3", (248_320, 2_560)),
        TensorSpec("lm_head.weight_scale", "BF16", (248_320, 1)),
    ]
    rest_bytes = SEED_TOTAL - sum(s.nbytes for s in ple + head)
    rest = [TensorSpec("model.language_model.rest.weight", "U8", (rest_bytes,))]
    files = {
        "model-00001-of-00003.safetensors": rest,
        "model-00002-of-00003.safetensors": ple,
        "model-00003-of-00003.safetensors": head,
    }
    weight_map = {}
    for name, specs in files.items():
        _sparse_file(tmp_path / name, specs)
        weight_map.update({s.name: name for s in specs})
    index = {"metadata": {"total_size": SEED_TOTAL}, "weight_map": weight_map}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))

    source = open_source(tmp_path)
    assert source.total_size_bytes == SEED_TOTAL
    (table,) = find_tables(source, DEFAULT_EMBEDDING_PATTERN)
    assert (len(table.shards), table.source_bytes) == (128, 102_400_491_520)
    opts = ConvertOptions(src=tmp_path, dst=tmp_path / "dst", lm_head_bf16=True)
    converted = {s.entry.name for s in table.shards}
    outputs = source_outputs(source, converted, find_lm_head(source))
    outputs += table_outputs(table, f"{PLE}.weight_scale", opts)
    after = size_after(source, outputs)
    assert after == SEED_AFTER
    assert round(after / 2**30, 2) == 118.31
    assert len([o for o in outputs if o.kind == "table"]) == 128
    assert max(o.tensors[0].shape[0] * 160 for o in outputs if o.kind == "table") / 2**20 < 381.5  # 381 MiB
