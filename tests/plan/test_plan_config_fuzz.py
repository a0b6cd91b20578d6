"""Malformed configs given to ``plan --config``: a plan or a seatrial error, never a traceback."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seatrial.errors import SeatrialError
from seatrial.plan import PlanRequest, plan

KEYS = [
    "num_hidden_layers",
    "hidden_size",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "layer_types",
    "sliding_window",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "full_attention_interval",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "num_experts",
    "moe_intermediate_size",
    "attention_chunk_size",
    "no_rope_layers",
    "torch_dtype",
    "model_type",
    "text_config",
    "max_position_embeddings",
]
VALUES = st.one_of(
    st.integers(-2, 300),
    st.none(),
    st.sampled_from(["bfloat16", "gemma2", "x", "full_attention"]),
    st.lists(st.sampled_from(["sliding_attention", "full_attention", "linear_attention", 1]), max_size=6),
)


BASE = {"num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 4, "vocab_size": 512}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=6))
def test_random_configs_plan_or_raise_seatrial_errors(tmp_path: Path, config: dict[str, object]) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(orjson.dumps({**BASE, **config}))
    try:
        result = plan(PlanRequest(config=path, hardware="h100", max_model_len=1024))
    except SeatrialError:
        return
    assert result.kv_cache_tokens >= 0 and result.per_rank
