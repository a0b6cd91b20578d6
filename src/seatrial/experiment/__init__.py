"""``seatrial experiment``: decide which configuration to adopt, from fresh server starts, with an A/A
noise floor and intervals over starts; and ``seatrial compare`` of run folders."""

from seatrial.experiment.plan import ExperimentPlan, check_single_variable, differences, load_plan, schedule
from seatrial.experiment.run import run_experiment

__all__ = [
    "ExperimentPlan",
    "check_single_variable",
    "differences",
    "load_plan",
    "run_experiment",
    "schedule",
]
