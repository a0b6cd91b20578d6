"""What every command's results are made of, below every capability: the one result model
(:class:`TrialResult`), what a run's verdicts add up to (:func:`judge_run`), the run folder
(:class:`RunFolder`), the one redaction function (:func:`redact`), and the levels tables."""

from seatrial.runs.folder import RunFolder, environment, read_jsonl, write_redacted
from seatrial.runs.redact import REDACTED, redact, secret_name
from seatrial.runs.result import TrialResult
from seatrial.runs.verdicts import counts_line, judge_run

__all__ = [
    "REDACTED",
    "RunFolder",
    "TrialResult",
    "counts_line",
    "environment",
    "judge_run",
    "read_jsonl",
    "redact",
    "secret_name",
    "write_redacted",
]
