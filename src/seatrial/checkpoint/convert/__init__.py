"""``seatrial convert``: FP8 tables with one global scale, lm_head restore, config surgery, resumable.

Public API: :func:`convert_checkpoint`, :class:`ConvertOptions`, :class:`ConvertResult`, and the scale
rule :func:`fp8_scale` / :func:`ceil_to_bf16` other capabilities (audit, plan) may reuse.
"""

from seatrial.checkpoint.convert.options import ConvertOptions
from seatrial.checkpoint.convert.result import ConvertResult
from seatrial.checkpoint.convert.run import ProgressSink, convert_checkpoint
from seatrial.checkpoint.convert.scale import ceil_to_bf16, fp8_scale
from seatrial.checkpoint.convert.source import DEFAULT_EMBEDDING_PATTERN

__all__ = [
    "DEFAULT_EMBEDDING_PATTERN",
    "ConvertOptions",
    "ConvertResult",
    "ProgressSink",
    "ceil_to_bf16",
    "convert_checkpoint",
    "fp8_scale",
]
