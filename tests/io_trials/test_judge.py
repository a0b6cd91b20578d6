"""The verdict rule of io trials on known numbers, the --expect and --pairs parsing, where scratch may go and
the KV chunk seatrial plan gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seatrial.errors import ConfigError
from seatrial.fleet.nodes import Ssh
from seatrial.io.judge import Limit, judge
from seatrial.io.kvchunk import chunk_from_config
from seatrial.io.models import IoConfig, parse_expect
from seatrial.io.net import pairs_of
from seatrial.io.nodes import parse_node
from seatrial.io.runner import scratch_parent
from seatrial.runs.verdicts import Verdict


def _runs(*values: float) -> list[dict[str, float]]:
    return [{"gbps": v} for v in values]


def test_below_floor_fails_naming_it_and_spread_is_review() -> None:
    low = judge(
        "n1",
        "storage.read",
        _runs(1.0, 1.0, 1.01),
        {"gbps": 1.0},
        [Limit("seq", 1.0, 2.0, "GB/s", True, "--expect x")],
        "gbps",
        0.15,
    )
    assert low.verdict is Verdict.FAIL and "below the floor 2" in (low.reason or "")
    wide = judge(
        "n1",
        "storage.read",
        _runs(1.0, 2.0, 3.0),
        {"gbps": 2.0},
        [Limit("seq", 2.0, 1.0, "GB/s", True, "x")],
        "gbps",
        0.15,
    )
    assert wide.verdict is Verdict.REVIEW_REQUIRED and wide.figures["spread"]["cv"] == 0.5
    ok = judge(
        "n1",
        "storage.read",
        _runs(2.0, 2.1, 2.05),
        {"gbps": 2.05},
        [Limit("seq", 2.05, None, "GB/s", True, "--expect y")],
        "gbps",
        0.15,
    )
    assert ok.verdict is Verdict.PASS and "no floor stated (--expect y)" in (ok.reason or "")
    ceiling = judge(
        "n",
        "kv.disk",
        _runs(1, 1),
        {},
        [Limit("read p95", 250.0, 200.0, "ms", False, "MLPerf")],
        "gbps",
        0.15,
    )
    assert ceiling.verdict is Verdict.FAIL and "not under 200" in (ceiling.reason or "")


def test_expect_and_trials_are_checked() -> None:
    assert parse_expect(["net.gbps=1", "kv.disk.read_p95_ms=150"]).net_gbps == 1.0
    with pytest.raises(ConfigError, match=r"net\.gbps"):
        parse_expect(["net.gbit=1"])
    with pytest.raises(ConfigError, match="not a number"):
        parse_expect(["net.gbps=fast"])
    assert IoConfig(trials=["storage"]).trials == ["storage.read", "storage.write", "storage.load"]
    with pytest.raises(ValueError, match="unknown trial"):
        IoConfig(trials=["storage.raed"])


def test_scratch_never_inside_the_checkpoint() -> None:
    assert scratch_parent(IoConfig(checkpoint="/models/m")) == "/models"
    with pytest.raises(ConfigError, match="never writes into a checkpoint"):
        scratch_parent(IoConfig(path="/models/m/tmp", checkpoint="/models/m/"))


def test_pairs_every_pair_then_ring() -> None:
    ssh = Ssh()
    nodes = [parse_node(f"h{i}", ssh) for i in range(6)]
    assert len(pairs_of(nodes[:4], None)) == 6
    many = pairs_of(nodes, None)
    assert len(many) == 6 + 3 and {(a.spec, b.spec) for a, b in many[:6]} >= {("h5", "h0"), ("h0", "h1")}
    with pytest.raises(ConfigError, match="h9"):
        pairs_of(nodes, [("h0", "h9")])
    with pytest.raises(ConfigError, match="expected 'local'"):
        parse_node("h1:/models", ssh)


def test_kv_chunk_from_the_models_config(tmp_path: Path) -> None:
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096,
              "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256, "torch_dtype": "bfloat16",
              "max_position_embeddings": 8192, "intermediate_size": 14336}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    size, source = chunk_from_config(tmp_path / "config.json")
    assert size == 16 * 32 * 2 * 8 * 128 * 2  # tokens x layers x (K, V) x kv heads x head_dim x BF16 = 2 MiB
    assert "16-token block" in source
