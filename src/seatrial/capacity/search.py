"""Where to probe next: ramp by doubling until a probe does not meet the target, then bisect the bracket.

The bracket is (``lower``: the highest load shown to MEET, ``upper``: the lowest load not shown to meet:
it MISSED, or stayed INCONCLUSIVE after its most requests). A load that does not meet is never guessed to:
the capacity reported is ``lower``, a load whose attainment's lower bound held the target. If the first
probe does not meet, the search halves the load down to its ``floor`` (``--min-rate``, default
``first / 16``; ``--min-concurrency``, default one user), probing the floor itself last, and never below
it: a floor that does not meet ends the search with "below the floor" (``early == "floor"``).
Bisection stops when ``upper / lower - 1 <= precision`` (concurrency: also when no whole number lies
between them), at ``max_load`` (the capacity is then only known to be at least that), or after
``max_probes``. The caller ends a search whose time budget is spent with :meth:`Search.out_of_time`: it
says what is known then, the bracket (``early == "budget"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

DOWN_STEPS = 4  # rate mode's default floor: the first probe halved this many times


@dataclass
class Search:
    first: float
    precision: float
    integer: bool = False
    max_load: float | None = None
    max_probes: int = 24
    unit: str = "req/s"
    floor: float | None = None  # the lowest load probed (default: first / 2**DOWN_STEPS; whole users: 1)
    lower: float | None = None
    upper: float | None = None
    tried: list[tuple[float, bool]] = field(default_factory=list)  # (load, met)
    stop_reason: str | None = None
    early: Literal["floor", "budget"] | None = None  # the search ended before its bracket closed

    @property
    def lowest(self) -> float:
        if self.floor is not None:
            return self.floor
        return 1.0 if self.integer else self.first / 2**DOWN_STEPS

    def record(self, load: float, met: bool) -> None:
        self.tried.append((load, met))
        if met:
            self.lower = load if self.lower is None else max(self.lower, load)
        else:
            self.upper = load if self.upper is None else min(self.upper, load)

    def _round(self, load: float) -> float:
        return float(max(1, round(load))) if self.integer else load

    def next_load(self) -> float | None:
        """The next load to probe, or None when the search is over (``stop_reason`` says why)."""
        if len(self.tried) >= self.max_probes:
            return self._stop(f"{self.max_probes} probes")
        if not self.tried:
            return self._round(self.first)
        if self.upper is None:  # still ramping up: every probe met
            assert self.lower is not None
            if self.max_load is not None and self.lower >= self.max_load:
                return self._stop(f"every probe met the target up to the highest allowed, {self.max_load:g}")
            nxt = self.lower * 2
            return self._round(min(nxt, self.max_load) if self.max_load is not None else nxt)
        if self.lower is None:  # nothing met yet: go down, to the floor and no further
            floor = self.lowest
            nxt = max(self._round(self.upper / 2), floor)
            if nxt >= self.upper:
                self.early = "floor"
                return self._stop(
                    f"no probe met the target down to the floor {self.upper:g}: below {self.upper:g} {self.unit}"
                )
            return nxt
        return self._bisect(self.lower, self.upper)

    def _bisect(self, lo: float, hi: float) -> float | None:
        if hi <= lo:
            return self._stop("a higher load met after a lower one did not (attainment is not monotone here)")
        if hi / lo - 1 <= self.precision:
            return self._stop(f"bracket [{lo:g}, {hi:g}] within {self.precision:.0%}")
        mid = self._round((lo + hi) / 2) if not self.integer else float(math.floor((lo + hi) / 2))
        if mid <= lo or mid >= hi:
            return self._stop(f"no whole number of users between {lo:g} and {hi:g}")
        return mid

    def out_of_time(self, elapsed_s: float, budget_s: float) -> None:
        """Ends the search because its time budget is spent, saying what is known: the bracket."""
        self.early = "budget"
        lo, hi, unit = self.lower, self.upper, self.unit
        known = (
            f"between {lo:g} and {hi:g} {unit}" if lo is not None and hi is not None
            else f"at least {lo:g} {unit}" if lo is not None
            else f"below {hi:g} {unit}" if hi is not None
            else "nothing shown yet"
        )  # fmt: skip
        self._stop(f"the time budget ({budget_s / 60:.3g} min) was spent: {known} after {elapsed_s / 60:.1f} min")

    def _stop(self, why: str) -> float | None:
        """Ends the search (``stop_reason``); returns None, the ``next_load`` that says so."""
        self.stop_reason = why
        return None
