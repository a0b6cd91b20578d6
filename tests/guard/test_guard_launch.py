"""Reading vLLM server commands into a launch spec, and the plan check's refusal path."""

from __future__ import annotations

from pathlib import Path

import pytest

from seatrial.errors import ConfigError, GuardError
from seatrial.guard import LaunchFit, LaunchSpec, check_before_launch, parse_vllm_command

GIB = 1024**3


def test_vllm_serve_with_positional_model_and_both_flag_styles(tmp_path: Path) -> None:
    spec = parse_vllm_command(
        [
            "vllm",
            "serve",
            str(tmp_path),
            "--gpu-memory-utilization=0.70",
            "--max_model_len",
            "16k",
            "-tp",
            "2",
            "--max-num-seqs",
            "64",
            "--enforce-eager",
            "--port",
            "8000",
            "--kv-cache-dtype",
            "fp8",
        ]
    )
    assert spec is not None
    assert spec.entrypoint == "vllm serve"
    assert spec.model_dir == tmp_path
    assert spec.gpu_memory_utilization == 0.70
    assert spec.max_model_len == 16000
    assert spec.tensor_parallel_size == 2 and spec.pipeline_parallel_size == 1
    assert spec.max_num_seqs == 64 and spec.enforce_eager and spec.kv_cache_dtype == "fp8"
    assert "--port" not in spec.flags_given and "--tensor-parallel-size" in spec.flags_given


def test_api_server_module_form_behind_env_and_sh_c() -> None:
    argv = [
        "env",
        "VLLM_CPU_KVCACHE_SPACE=4",
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/no/such/dir",
        "--max-model-len",
        "16K",
        "--tensor-parallel-size",
        "4",
    ]
    spec = parse_vllm_command(argv)
    assert spec is not None and spec.model == "/no/such/dir" and spec.model_dir is None
    assert spec.max_model_len == 16384 and spec.tensor_parallel_size == 4
    assert spec.gpu_memory_utilization == 0.9  # vLLM's default when not given
    wrapped = parse_vllm_command(["sh", "-c", "exec vllm serve /m --trust-remote-code -pp 2"])
    assert wrapped is not None and wrapped.model == "/m" and wrapped.pipeline_parallel_size == 2


def test_other_commands_are_not_vllm_and_bad_values_are_clear() -> None:
    assert parse_vllm_command(["python", "-m", "http.server"]) is None
    assert parse_vllm_command(["sleep", "5"]) is None
    with pytest.raises(ConfigError, match="--max-model-len 'long'"):
        parse_vllm_command(["vllm", "serve", "m", "--max-model-len", "long"])
    with pytest.raises(ConfigError, match="invalid value"):
        parse_vllm_command(["vllm", "serve", "m", "--gpu-memory-utilization", "1.5"])


class RecordingPredictor:
    """A predictor for tests: fits when gpu_memory_utilization is at most ``limit``."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.seen: list[tuple[LaunchSpec, int]] = []

    def __call__(self, spec: LaunchSpec, protection_line_bytes: int) -> LaunchFit:
        self.seen.append((spec, protection_line_bytes))
        fits = spec.gpu_memory_utilization <= self.limit
        ledger = f"gpu budget {spec.gpu_memory_utilization * 121:.2f} GiB of 121 GiB"
        return LaunchFit(
            fits=fits, ledger=ledger, changes=[] if fits else [f"--gpu-memory-utilization {self.limit}"]
        )


def test_refuses_when_the_plan_predicts_a_crossing(tmp_path: Path) -> None:
    predictor = RecordingPredictor(limit=0.70)
    argv = ["vllm", "serve", "org/model", "--gpu-memory-utilization", "0.90"]
    with pytest.raises(GuardError) as info:
        check_before_launch(argv, tmp_path, 12 * GIB, predictor, force=False)
    message = str(info.value)
    assert "12.00 GiB MemAvailable line" in message
    assert "gpu budget 108.90 GiB of 121 GiB" in message and "--gpu-memory-utilization 0.7" in message
    spec, line = predictor.seen[0]
    assert spec.model_dir == tmp_path and line == 12 * GIB  # --checkpoint wins over the hub name

    forced = check_before_launch(argv, tmp_path, 12 * GIB, predictor, force=True)
    assert forced["checked"] and forced["fits"] is False and forced["forced"] is True


def test_plan_check_applies_only_when_it_can(tmp_path: Path) -> None:
    predictor = RecordingPredictor(limit=0.95)
    fits = check_before_launch(["vllm", "serve", str(tmp_path)], None, GIB, predictor, force=False)
    assert fits["checked"] and fits["fits"] and not fits["forced"]
    hub = check_before_launch(["vllm", "serve", "org/model"], None, GIB, predictor, force=False)
    assert hub["checked"] is False and "--checkpoint" in hub["reason"]
    other = check_before_launch(["sleep", "1"], None, GIB, predictor, force=False)
    assert other == {"checked": False, "reason": "not a vLLM server command"}
    with pytest.raises(ConfigError, match="--checkpoint /no/such: not a directory"):
        check_before_launch(["vllm", "serve", "m"], Path("/no/such"), GIB, predictor, force=False)
