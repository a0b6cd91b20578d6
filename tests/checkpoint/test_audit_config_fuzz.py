"""Malformed config.json / hf_quant_config.json: an audit or a seatrial error, never a traceback."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.ckptgen.layouts import bf16, fp8_channel
from tests.ckptgen.writer import write_sharded

from seatrial.checkpoint import audit
from seatrial.errors import SeatrialError

KEYS = [
    "quantization_config",
    "quant_method",
    "config_groups",
    "weights",
    "num_bits",
    "type",
    "group_size",
    "ignore",
    "text_config",
    "num_hidden_layers",
    "mtp_num_hidden_layers",
    "ple_embedding_dtype",
    "bits",
    "quantization",
    "quant_algo",
    "exclude_modules",
    "torch_dtype",
    "modules_to_not_convert",
]
JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 70)
    | st.sampled_from(["compressed-tensors", "fp8", "gptq", "modelopt", "float", "int", "x"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    config=st.dictionaries(st.sampled_from(KEYS), JSON, max_size=5),
    hf_quant=JSON | st.dictionaries(st.sampled_from(KEYS), JSON, max_size=3),
)
def test_random_configs_never_escape(tmp_path: Path, config: dict[str, object], hf_quant: object) -> None:
    root = tmp_path / "ckpt"
    specs = bf16("model.layers.0.mlp.down_proj.weight", 4, 4) + fp8_channel("lm_head", 8, 4)
    write_sharded(root, {"model.safetensors": specs}, config)
    if isinstance(hf_quant, dict):
        (root / "hf_quant_config.json").write_bytes(orjson.dumps(hf_quant))
    try:
        report = audit(root)
    except SeatrialError:
        return
    assert report.total_bytes == sum(s.nbytes for s in specs)
