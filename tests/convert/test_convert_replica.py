"""End to end on the seed-000 replica: PLE -> FP8 with one global scale, lm_head FP8 -> BF16.

Every expected value here is computed independently with torch from the source tensors.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import pytest
import torch
from replica import HIDDEN, PLE, PLE_DIM, PLE_ROWS, PLE_SHARDS, VOCAB, convert, lm_head_tensors, ple_tensors
from safetensors.torch import load_file

from seatrial.checkpoint.convert import ConvertOptions, ConvertResult, convert_checkpoint


def _ceil_bf16(value: float) -> float:
    bits = torch.arange(1, 0x7F80, dtype=torch.int32).to(torch.int16)
    candidates = bits.view(torch.bfloat16).double()
    return float(candidates[candidates >= value].min())


def _reference_fp8(scale: float) -> dict[str, torch.Tensor]:
    return {name: _fp8(w, scale) for name, w in ple_tensors().items()}


def _fp8(w: torch.Tensor, scale: float) -> torch.Tensor:
    return (w.float() / scale).clamp(-448, 448).to(torch.float8_e4m3fn)


@pytest.fixture
def converted(replica: Path, tmp_path: Path, loops: str) -> tuple[Path, Path, ConvertResult]:
    """The replica converted with both options, once by the compiled loops and once by numpy."""
    dst = tmp_path / "dst"
    edits = [
        "layer_types.1=full_attention",
        "layer_types.2=full_attention",
        "ple_embedding_dtype=float8_e4m3fn",
    ]
    result = convert(replica, dst, set_config=edits)
    assert result.kernel == loops
    return replica, dst, result


def _tensors(dst: Path) -> dict[str, torch.Tensor]:
    index = json.loads((dst / "model.safetensors.index.json").read_text())
    out: dict[str, torch.Tensor] = {}
    for fname in sorted(set(index["weight_map"].values())):
        out.update(load_file(str(dst / fname)))
    assert sorted(out) == sorted(index["weight_map"])
    return out


def test_scale_is_the_ceil_rule_of_the_global_max(converted: tuple[Path, Path, ConvertResult]) -> None:
    _, dst, result = converted
    global_max = max(float(w.float().abs().max()) for w in ple_tensors().values())
    expected = _ceil_bf16(global_max / 448)
    table = result.tables[0]
    assert (table.global_max, table.scale) == (global_max, expected)
    stored = _tensors(dst)[f"{PLE}.weight_scale"]
    assert stored.dtype == torch.bfloat16 and list(stored.shape) == [1]
    assert float(stored.double()) == expected


def test_fp8_values_equal_an_independent_torch_cast(converted: tuple[Path, Path, ConvertResult]) -> None:
    _, dst, result = converted
    tensors = _tensors(dst)
    for name, expected in _reference_fp8(result.tables[0].scale).items():
        assert tensors[name].dtype == torch.float8_e4m3fn
        assert torch.equal(tensors[name].view(torch.uint8), expected.view(torch.uint8)), name


def test_lm_head_restored_to_bf16_exactly_as_formula(converted: tuple[Path, Path, ConvertResult]) -> None:
    _, dst, result = converted
    source = lm_head_tensors()
    expected = (source["lm_head.weight"].float() * source["lm_head.weight_scale"].float()).to(torch.bfloat16)
    restored = _tensors(dst)["lm_head.weight"]
    assert restored.dtype == torch.bfloat16 and list(restored.shape) == [VOCAB, HIDDEN]
    assert torch.equal(restored.view(torch.int16), expected.view(torch.int16))
    exact = source["lm_head.weight"].float() * source["lm_head.weight_scale"].float()
    inexact = int((restored.float() != exact).sum())
    assert result.lm_head is not None
    assert (result.lm_head.inexact_elements, result.lm_head.elements) == (inexact, VOCAB * HIDDEN)


def test_layout_and_index_as_seed_describes(converted: tuple[Path, Path, ConvertResult]) -> None:
    _, dst, result = converted
    index = json.loads((dst / "model.safetensors.index.json").read_text())
    weight_map = index["weight_map"]
    assert "lm_head.weight_scale" not in weight_map
    shard_files = [weight_map[f"{PLE}.shard_{i}.weight"] for i in range(PLE_SHARDS)]
    assert len(set(shard_files)) == PLE_SHARDS  # one file per shard tensor
    assert result.tables[0].output_files == shard_files
    assert weight_map[f"{PLE}.weight_scale"] not in shard_files
    assert "model-00002-of-00003.safetensors" not in set(weight_map.values())  # PLE-only file gone
    assert (dst / "tokenizer.json").read_text() == '{"model": {"type": "BPE"}}'


def test_total_size_follows_the_seed_formula(converted: tuple[Path, Path, ConvertResult]) -> None:
    src, dst, result = converted
    before = json.loads((src / "model.safetensors.index.json").read_text())["metadata"]["total_size"]
    ple_bf16 = PLE_SHARDS * PLE_ROWS * PLE_DIM * 2
    lm_head_delta = VOCAB * HIDDEN * 2 - VOCAB * HIDDEN - VOCAB * 2  # BF16 - FP8 - row scale
    expected = before - ple_bf16 + ple_bf16 // 2 + 2 + lm_head_delta
    after = json.loads((dst / "model.safetensors.index.json").read_text())["metadata"]["total_size"]
    assert (result.total_size_before, result.total_size_after, after) == (before, expected, expected)
    assert sum(t.numel() * t.element_size() for t in _tensors(dst).values()) == expected


def test_config_surgery_and_change_log(converted: tuple[Path, Path, ConvertResult]) -> None:
    _, dst, result = converted
    config = json.loads((dst / "config.json").read_text())
    qcfg = config["quantization_config"]
    assert "group_1" not in qcfg["config_groups"]  # its only target was lm_head
    assert all("lm_head" not in g["targets"] for g in qcfg["config_groups"].values())
    assert qcfg["ignore"] == ["re:.*ple.*", "model.embed_tokens", "lm_head"]
    assert config["layer_types"] == ["full_attention"] * 4
    assert config["ple_embedding_dtype"] == "float8_e4m3fn"
    log = json.loads((dst / "seatrial-convert-changelog.json").read_text())
    keys = [c["key"] for c in log["changes"]]
    assert "layer_types.1" in keys and "quantization_config.ignore" in keys
    new_key = next(c for c in log["changes"] if c["key"] == "ple_embedding_dtype")
    assert (new_key["before"], new_key["reason"]) == (None, "--set-config (new key)")
    assert log["tensors_removed_from_index"] == ["lm_head.weight_scale"]
    assert len(result.config_changes) == len(log["changes"])


def test_untouched_files_are_hard_links_and_source_unchanged(replica: Path, tmp_path: Path) -> None:
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in replica.iterdir()}
    mtimes = {p.name: p.stat().st_mtime_ns for p in replica.iterdir()}
    result = convert(replica, tmp_path / "dst")
    linked = tmp_path / "dst" / "model-00001-of-00003.safetensors"
    assert linked.stat().st_ino == (replica / linked.name).stat().st_ino
    assert result.files["hardlink"] == 2  # model-00001 and tokenizer.json
    assert before == {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in replica.iterdir()}
    assert mtimes == {p.name: p.stat().st_mtime_ns for p in replica.iterdir()}


def test_fidelity_matches_an_independent_computation(converted: tuple[Path, Path, ConvertResult]) -> None:
    _, _, result = converted
    table = result.tables[0]
    scale = table.scale
    signal = noise = flushed = elements = 0.0
    cosines = []
    for name, w in ple_tensors().items():
        src = w.double()
        deq = _reference_fp8(scale)[name].double() * scale
        signal += float((src**2).sum())
        noise += float(((src - deq) ** 2).sum())
        flushed += float(((src != 0) & (deq == 0)).sum())
        elements += src.numel()
        live = src.norm(dim=1) > 0
        cosines.append(torch.nn.functional.cosine_similarity(src[live], deq[live], dim=1))
    cos = torch.cat(cosines)
    fid = table.fidelity
    # per-row sums are float32 (sums over rows float64): agreement to ~1e-7 relative
    assert fid.snr_db == pytest.approx(10 * math.log10(signal / noise), rel=1e-6)
    assert fid.row_cosine_mean == pytest.approx(float(cos.mean()), rel=1e-6)
    assert fid.row_cosine_min == pytest.approx(float(cos.min()), rel=1e-6)
    assert fid.flushed_to_zero_share == flushed / elements > 0
    assert fid.rows_measured == PLE_SHARDS * (PLE_ROWS - 1)


def test_precision_lost_against_shard_local_scale(converted: tuple[Path, Path, ConvertResult]) -> None:
    _, _, result = converted
    table = result.tables[0]
    for shard, w in zip(table.fidelity.shards, ple_tensors().values(), strict=True):
        local = _ceil_bf16(float(w.float().abs().max()) / 448)
        assert shard.precision_lost_bits == pytest.approx(math.log2(table.scale / local), abs=1e-12)
    halved = table.fidelity.shards[5].precision_lost_bits
    assert halved == max(s.precision_lost_bits for s in table.fidelity.shards)
    assert 0.9 < halved < 1.6  # shard 5 holds half the magnitude: about one bit


def test_shards_flag_groups_tensors_into_n_files(replica: Path, tmp_path: Path) -> None:
    result = convert(replica, tmp_path / "dst", shards=3)
    files = result.tables[0].output_files
    assert len(files) == 3
    counts = [len(load_file(str(tmp_path / "dst" / f))) for f in files]
    assert counts == [3, 3, 2]


def test_max_file_bytes_bounds_every_table_file(replica: Path, tmp_path: Path) -> None:
    bound = 2 * PLE_ROWS * PLE_DIM + 512
    result = convert(replica, tmp_path / "dst", max_file_bytes=bound)
    sizes = [(tmp_path / "dst" / f).stat().st_size for f in result.tables[0].output_files]
    assert max(sizes) <= bound and len(sizes) == 4


def test_lm_head_only_with_embedding_off_and_custom_scale_name(replica: Path, tmp_path: Path) -> None:
    result = convert(replica, tmp_path / "a", embedding_pattern=None)
    assert result.tables == [] and result.lm_head is not None
    index = json.loads((tmp_path / "a" / "model.safetensors.index.json").read_text())
    assert index["weight_map"][f"{PLE}.shard_0.weight"] == "model-00002-of-00003.safetensors"
    custom = convert(replica, tmp_path / "b", scale_name="{table}.global_scale", lm_head_bf16=False)
    assert custom.tables[0].scale_name == f"{PLE}.global_scale"
    assert f"{PLE}.global_scale" in _tensors(tmp_path / "b")
    assert "lm_head.weight_scale" in _tensors(tmp_path / "b")  # lm_head untouched without the flag


def test_progress_reports_every_byte_and_outputs_are_world_readable(replica: Path, tmp_path: Path) -> None:
    class Recorder:
        def __init__(self) -> None:
            self.phases: list[list[int]] = []

        def phase(self, name: str, total_bytes: int) -> None:
            self.phases.append([total_bytes, 0])

        def advance(self, nbytes: int) -> None:
            self.phases[-1][1] += nbytes

    recorder = Recorder()
    convert_checkpoint(ConvertOptions(src=replica, dst=tmp_path / "dst", lm_head_bf16=True), recorder)
    ple_bytes = PLE_SHARDS * PLE_ROWS * PLE_DIM * 2
    assert recorder.phases[0] == [ple_bytes, ple_bytes]  # the scan pass
    assert recorder.phases[1][0] == recorder.phases[1][1] > ple_bytes  # the convert pass
    for name in ("config.json", "model.safetensors.index.json", "seatrial-convert-manifest.json"):
        assert (tmp_path / "dst" / name).stat().st_mode & 0o777 == 0o644
