"""Memory planning: hardware profiles, KV bytes by vLLM's rules, per-rank ledgers, fit search.

Public API: ``plan(PlanRequest) -> PlanResult``, ``search(PlanRequest)`` and ``check_launch(...)``
(the one call a launch guard needs).
"""

from seatrial.plan.api import check_launch
from seatrial.plan.hardware import PROFILES, Hardware, resolve
from seatrial.plan.models import LayoutRow, PlanRequest, PlanResult, RankLedger
from seatrial.plan.planner import plan
from seatrial.plan.search import search

__all__ = [
    "PROFILES",
    "Hardware",
    "LayoutRow",
    "PlanRequest",
    "PlanResult",
    "RankLedger",
    "check_launch",
    "plan",
    "resolve",
    "search",
]
