"""A vLLM server command line read into a typed launch spec, for the plan check before launch.

Recognised forms (possibly behind ``env``/``nice`` or inside ``sh -c '...'``):
``vllm serve MODEL [flags]`` and ``python -m vllm.entrypoints.openai.api_server --model MODEL [flags]``.
Flags may be written ``--flag value`` or ``--flag=value``, with dashes or underscores, or by vLLM's
short aliases (``-tp``, ``-pp``, ``-dp``, ``-q``). Values not given keep vLLM's own defaults.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from seatrial.errors import ConfigError

API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
_ALIASES = {
    "-tp": "--tensor-parallel-size",
    "-pp": "--pipeline-parallel-size",
    "-dp": "--data-parallel-size",
    "-q": "--quantization",
    "--device-memory-utilization": "--gpu-memory-utilization",
}
_INT_FLAGS = {
    "--max-model-len": "max_model_len",
    "--tensor-parallel-size": "tensor_parallel_size",
    "--pipeline-parallel-size": "pipeline_parallel_size",
    "--data-parallel-size": "data_parallel_size",
    "--max-num-seqs": "max_num_seqs",
    "--max-num-batched-tokens": "max_num_batched_tokens",
    "--max-parallel-loading-workers": "max_parallel_loading_workers",
    "--kv-cache-memory-bytes": "kv_cache_memory_bytes",
}
_STR_FLAGS = {
    "--model": "model",
    "--dtype": "dtype",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--quantization": "quantization",
    "--load-format": "load_format",
}
_BOOL_FLAGS = {"--enforce-eager": ("enforce_eager", True), "--no-enforce-eager": ("enforce_eager", False)}
# Flags that take no value, so the token after them is not eaten as their value.
_OTHER_BOOL_FLAGS = {
    "--trust-remote-code",
    "--enable-prefix-caching",
    "--no-enable-prefix-caching",
    "--enable-chunked-prefill",
    "--no-enable-chunked-prefill",
    "--disable-log-requests",
    "--disable-log-stats",
    "--enable-auto-tool-choice",
}
_SUFFIX = {"k": 1000, "m": 1000**2, "g": 1000**3, "K": 1024, "M": 1024**2, "G": 1024**3}


class LaunchSpec(BaseModel):
    """What a vLLM launch asks of the host, in vLLM's own names; defaults are vLLM's."""

    model_config = ConfigDict(extra="forbid")

    entrypoint: str
    model: str | None = None
    model_dir: Path | None = None
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    max_model_len: int | None = Field(default=None, gt=0)
    tensor_parallel_size: int = Field(default=1, gt=0)
    pipeline_parallel_size: int = Field(default=1, gt=0)
    data_parallel_size: int = Field(default=1, gt=0)
    max_num_seqs: int | None = Field(default=None, gt=0)
    max_num_batched_tokens: int | None = Field(default=None, gt=0)
    max_parallel_loading_workers: int | None = Field(default=None, gt=0)
    kv_cache_memory_bytes: int | None = Field(default=None, gt=0)
    dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    quantization: str | None = None
    load_format: str | None = None
    enforce_eager: bool = False
    flags_given: list[str] = Field(default_factory=list)


def _int_value(flag: str, text: str) -> int:
    """vLLM's integer syntax: ``16384``, ``16k`` (x1000) or ``16K`` (x1024)."""
    scale = _SUFFIX.get(text[-1:], 1)
    digits = text[:-1] if scale != 1 else text
    try:
        return int(float(digits) * scale) if scale != 1 else int(digits)
    except ValueError:
        raise ConfigError(f"guard: {flag} {text!r} in the server command is not an integer") from None


def _split_flag(token: str) -> tuple[str, str | None]:
    name, eq, value = token.partition("=")
    name = name if name in _ALIASES else "--" + name.lstrip("-").replace("_", "-")
    return _ALIASES.get(name, name), (value if eq else None)


def _locate(argv: list[str]) -> tuple[str, list[str]] | None:
    """The entrypoint and the arguments that follow it, or ``None`` if this is not a vLLM server."""
    for i, token in enumerate(argv):
        if Path(token).name == "vllm" and i + 1 < len(argv) and argv[i + 1] == "serve":
            return "vllm serve", argv[i + 2 :]
        if token == "-m" and i + 1 < len(argv) and argv[i + 1] == API_SERVER_MODULE:
            return API_SERVER_MODULE, argv[i + 2 :]
        if token == "-c" and i + 1 < len(argv) and Path(argv[0]).name in ("sh", "bash", "dash", "zsh"):
            return _locate(shlex.split(argv[i + 1]))
    return None


def parse_vllm_command(argv: list[str]) -> LaunchSpec | None:
    """Read a server command into a :class:`LaunchSpec`; ``None`` when it is not a vLLM server."""
    located = _locate(argv)
    if located is None:
        return None
    entrypoint, args = located
    fields: dict[str, object] = {"entrypoint": entrypoint}
    given: list[str] = []
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if not token.startswith("-"):
            if entrypoint == "vllm serve" and "model" not in fields:
                fields["model"] = token
            continue
        flag, value = _split_flag(token)
        if flag in _BOOL_FLAGS:
            name, flag_value = _BOOL_FLAGS[flag]
            fields[name] = flag_value
            given.append(flag)
            continue
        if flag in _OTHER_BOOL_FLAGS:
            continue
        if value is None and i < len(args) and not args[i].startswith("--"):
            value, i = args[i], i + 1
        if flag in _INT_FLAGS and value is not None:
            fields[_INT_FLAGS[flag]] = _int_value(flag, value)
        elif flag in _STR_FLAGS and value is not None:
            fields[_STR_FLAGS[flag]] = value
        elif flag == "--gpu-memory-utilization" and value is not None:
            fields["gpu_memory_utilization"] = _float_value(flag, value)
        else:
            continue
        given.append(flag)
    model = fields.get("model")
    if isinstance(model, str) and Path(model).is_dir():
        fields["model_dir"] = Path(model)
    try:
        return LaunchSpec.model_validate({**fields, "flags_given": given})
    except ValueError as exc:
        raise ConfigError(f"guard: the server command has an invalid value: {exc}") from None


def _float_value(flag: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"guard: {flag} {text!r} in the server command is not a number") from None
