"""Predict before launch: the one place where the guard asks the memory plan whether a launch fits.

The plan itself lives in :mod:`seatrial.plan`; the guard only needs a *predictor*, a callable that
takes the :class:`~seatrial.guard.launch.LaunchSpec` and the host's protection line and answers with a
:class:`LaunchFit`. A launch whose predicted load peak or steady state crosses the line is refused
unless ``--force`` is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict

from seatrial.errors import ConfigError, GuardError
from seatrial.guard.launch import LaunchSpec, parse_vllm_command
from seatrial.guard.meminfo import GIB


class LaunchFit(BaseModel):
    """A predictor's answer: ``fits`` (peak and steady state stay above the line), a printable
    memory ledger, and what to change when it does not fit."""

    model_config = ConfigDict(extra="forbid")

    fits: bool
    ledger: str
    changes: list[str] = []


class Predictor(Protocol):
    def __call__(self, spec: LaunchSpec, protection_line_bytes: int) -> LaunchFit: ...


def launch_spec(argv: list[str], checkpoint: Path | None) -> LaunchSpec | None:
    """The spec of a vLLM server command, with ``--checkpoint`` as its model directory if given."""
    if checkpoint is not None and not checkpoint.is_dir():
        raise ConfigError(f"--checkpoint {checkpoint}: not a directory")
    spec = parse_vllm_command(argv)
    if spec is not None and checkpoint is not None:
        spec = spec.model_copy(update={"model_dir": checkpoint})
    return spec


def refusal_message(check: LaunchFit, protection_line_bytes: int) -> str:
    changes = "\n".join(f"  - {c}" for c in check.changes) or "  (the plan named no change)"
    return (
        f"refusing to launch: the plan predicts the load peak or steady state crosses the "
        f"{protection_line_bytes / GIB:.2f} GiB MemAvailable line\n{check.ledger}\n"
        f"what to change:\n{changes}\n(--force launches anyway)"
    )


def check_before_launch(
    argv: list[str],
    checkpoint: Path | None,
    protection_line_bytes: int,
    predictor: Predictor | None,
    force: bool,
) -> dict[str, Any]:
    """Run the plan check when it applies. Returns the record for the history's ``start`` line;
    raises :class:`GuardError` with the ledger and the changes when the launch is refused."""
    spec = launch_spec(argv, checkpoint)
    if spec is None:
        return {"checked": False, "reason": "not a vLLM server command"}
    record: dict[str, Any] = {"spec": spec.model_dump(mode="json")}
    if spec.model_dir is None:
        return {**record, "checked": False, "reason": "no local model directory (give --checkpoint DIR)"}
    if predictor is None:
        return {**record, "checked": False, "reason": "no plan predictor is available"}
    check = predictor(spec, protection_line_bytes)
    record.update(checked=True, fits=check.fits, forced=force and not check.fits, changes=check.changes)
    if not check.fits and not force:
        raise GuardError(refusal_message(check, protection_line_bytes))
    return record


def plan_predictor(spec: LaunchSpec, protection_line_bytes: int) -> LaunchFit:
    """``seatrial plan`` on the launch's own settings and the local hardware, the protection line
    taken as the host share the load must leave free (seed 000: 12 GiB MemAvailable)."""
    from seatrial.plan import check_launch

    assert spec.model_dir is not None
    kv_gib = spec.kv_cache_memory_bytes / GIB if spec.kv_cache_memory_bytes else None
    result = check_launch(
        spec.model_dir,
        hardware="local",
        gpu_memory_utilization=spec.gpu_memory_utilization,
        max_model_len=spec.max_model_len,
        tensor_parallel_size=spec.tensor_parallel_size,
        pipeline_parallel_size=spec.pipeline_parallel_size,
        host_reserve_gib=protection_line_bytes / GIB,
        kv_cache_gib=kv_gib,
        max_num_seqs=spec.max_num_seqs,
        max_num_batched_tokens=spec.max_num_batched_tokens,
        kv_cache_dtype=spec.kv_cache_dtype,
        weights_from_config=spec.load_format == "dummy",
    )
    changes = [f.message for f in result.findings if f.severity in ("error", "warning")]
    return LaunchFit(fits=result.fits, ledger=result.render_ledger(), changes=changes)


def default_predictor() -> Predictor:
    """The predictor the CLI uses: the memory plan of :mod:`seatrial.plan`."""
    return plan_predictor
