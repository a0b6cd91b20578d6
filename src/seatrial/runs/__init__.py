"""What every command's results are made of, below every capability: the one result model
(:class:`TrialResult`), what a run's verdicts add up to (:func:`judge_run`), the run folder
(:class:`RunFolder`), the one redaction function (:func:`redact`), and the levels tables.

Names load on first use, so a command that only needs :func:`redact` does not import the result
model's validation library."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seatrial.lazy import lazy_names

if TYPE_CHECKING:
    from seatrial.runs.folder import RunFolder, environment, read_jsonl, record
    from seatrial.runs.redact import REDACTED, redact, secret_name
    from seatrial.runs.result import TrialResult
    from seatrial.runs.verdicts import counts_line, judge_run

_WHERE = {
    "RunFolder": "folder", "environment": "folder", "read_jsonl": "folder", "record": "folder",
    "REDACTED": "redact", "redact": "redact", "secret_name": "redact",
    "TrialResult": "result",
    "counts_line": "verdicts", "judge_run": "verdicts",
}  # fmt: skip

__all__ = [
    "REDACTED",
    "RunFolder",
    "TrialResult",
    "counts_line",
    "environment",
    "judge_run",
    "read_jsonl",
    "record",
    "redact",
    "secret_name",
]


__getattr__ = lazy_names(__name__, _WHERE)
