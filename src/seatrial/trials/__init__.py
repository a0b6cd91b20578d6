"""Acceptance trials (basic, context, mixed, saturation, prefix-cache, kv-tier), their statistics
and verdicts. ``run_accept`` runs a profile against one server."""

from seatrial.runs.result import TrialResult
from seatrial.trials.accept import run_accept
from seatrial.trials.profile import Profile, load_profile
from seatrial.trials.registry import TRIAL_NAMES

__all__ = ["TRIAL_NAMES", "Profile", "TrialResult", "load_profile", "run_accept"]
