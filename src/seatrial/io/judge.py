"""How an io trial's repeats become its verdict: FAIL when a median breaks a stated limit (naming it),
REVIEW_REQUIRED when the limits hold but the repeats spread more than ``max_cv`` (SD / mean), else PASS; a
PASS with no stated limit says so. UNAVAILABLE rows carry why nothing was measured."""

from __future__ import annotations

from typing import Any, NamedTuple

from seatrial.io.spread import spread
from seatrial.runs.summaries.io import IoRow
from seatrial.runs.verdicts import Verdict


class Limit(NamedTuple):
    label: str  # "sequential read 1 MiB"
    value: float | None
    limit: float | None  # None: none stated
    unit: str
    at_least: bool = True  # a floor (GB/s) or, False, a ceiling (ms)
    source: str = ""  # where the limit comes from: "--expect storage.read.gbps", "MLPerf Storage default"


def unavailable(node: str, trial: str, why: str, **figures: Any) -> IoRow:
    return IoRow(node=node, trial=trial, verdict=Verdict.UNAVAILABLE, reason=why, figures=figures)


def judge(node: str, trial: str, runs: list[dict[str, Any]], figures: dict[str, Any], limits: list[Limit],
          spread_of: str, max_cv: float) -> IoRow:  # fmt: skip
    """The row of a measured trial; ``spread_of``: the run figure whose spread decides REVIEW_REQUIRED."""
    values = [float(r[spread_of]) for r in runs if isinstance(r.get(spread_of), int | float)]
    sp = spread(values)
    figures = {**figures, "spread": {"of": spread_of, **sp, "max_cv": max_cv},
               "limits": [lim._asdict() for lim in limits if lim.limit is not None]}  # fmt: skip
    broken = [b for lim in limits if lim.limit is not None and lim.value is not None and (b := _broken(lim))]
    if broken:
        return IoRow(
            node=node, trial=trial, verdict=Verdict.FAIL, reason="; ".join(broken), figures=figures, runs=runs
        )
    if sp["cv"] is not None and sp["cv"] > max_cv:
        why = (f"the {len(values)} repeats of {spread_of} spread {sp['cv']:.0%} (SD/mean; {sp['min']:g} to {sp['max']:g}), "
               f"more than the stated {max_cv:.0%}: measure again or find what varies")  # fmt: skip
        return IoRow(
            node=node, trial=trial, verdict=Verdict.REVIEW_REQUIRED, reason=why, figures=figures, runs=runs
        )
    held = [f"{lim.label} {lim.value:g} {lim.unit} {'>=' if lim.at_least else '<'} {lim.limit:g} ({lim.source})"
            for lim in limits if lim.limit is not None and lim.value is not None]  # fmt: skip
    unstated = list(dict.fromkeys(lim.source for lim in limits if lim.limit is None and lim.source))
    parts = held + ([f"no floor stated ({', '.join(unstated)})"] if unstated else [])
    parts.append(
        f"median of {len(runs)} repeats, spread {sp['cv']:.0%}"
        if sp["cv"] is not None
        else f"{len(runs)} run"
    )
    return IoRow(
        node=node, trial=trial, verdict=Verdict.PASS, reason="; ".join(parts), figures=figures, runs=runs
    )


def _broken(lim: Limit) -> str | None:
    assert lim.value is not None and lim.limit is not None
    if lim.at_least and lim.value < lim.limit:
        return (
            f"{lim.label} {lim.value:g} {lim.unit} is below the floor {lim.limit:g} {lim.unit} ({lim.source})"
        )
    if not lim.at_least and lim.value >= lim.limit:
        return f"{lim.label} {lim.value:g} {lim.unit} is not under {lim.limit:g} {lim.unit} ({lim.source})"
    return None
