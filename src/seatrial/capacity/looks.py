"""A probe's looks at its own data, and what they may conclude (issue 38 items 4 and 5).

- Outcomes: each run's good/bad series in send order, cut into consecutive batches twice its correlation
  time long (requests that shared the server's queue are not independent;
  :func:`seatrial.stats.proportions.data_batches`), and that correlation time is the least design effect
  of the cluster-aware Wilson interval. The time is at least a multiple of the others the run held in
  flight (:func:`seatrial.stats.proportions.least_correlation`): 5 x for an open loop, 0.5 x for a closed
  one (benchmarks/attainment_coverage.py measures both).
- Looks: after each run the probe judges all its runs pooled: MEETS when the interval's lower bound is at
  least the target, MISSES when its upper bound is below it, else INCONCLUSIVE and, within the probe's
  budget, another run. Looking again after more requests is paid for by alpha spending: look ``j``
  (1, 2, ...) uses the two-sided confidence ``1 - (1 - confidence) / 2**j``, so the chances of a false
  MEETS at every look sum (union bound: the looks' correlation only makes it smaller) to at most
  ``(1 - confidence) / 2``, the one-sided error of a single look at ``confidence``, however many looks the
  probe takes. The same for a false MISSES. benchmarks/probe_looks.py measures the false MEETS rate over
  all looks at a true attainment 0.01 under the target.
- Overloaded: a run at a rate whose queue kept growing (load.window) MISSES at once: its share is of a
  transient that would only get worse, never averaged with other runs into a verdict.
- Sizes: the first run is :func:`requests_for` at the first look's confidence; each next run brings the
  probe to what its interval needs at the design effect seen so far and at the next look's confidence
  (the first run's size x design effect x (z of the next look / z of the first)^2), at least the first
  run's size, within the budget.
- Length by what is in flight (item 3): a run measures at least ``STEADY_MULTIPLE`` x the requests in
  flight at its load (``in_flight``: the caller's forecast, then the most a run saw, from the client or the
  server's running + waiting), and the budget is at least ``BUDGET_RUNS`` such runs. A run shorter than
  that (the forecast was low) cannot MEET: its window held little more than the queue's fill, which flatters
  the server; it MISSES as it stands, else the probe runs again at the length the run showed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from seatrial.load.window import STEADY_MULTIPLE, too_short
from seatrial.runs.summaries.capacity import ProbeVerdict
from seatrial.stats.proportions import Share, data_batches, least_correlation, share_ci, wilson, z_two_sided

MIN_REQUESTS = 10
BUDGET_RUNS = 3  # a probe's budget holds at least this many runs of that length
MAX_LOOKS = 40  # a probe's last look (0.05 / 2**40 = 4.5e-14; much later, 1 - that rounds to 1.0: no quantile)


def look_confidence(confidence: float, look: int) -> float:
    """The two-sided confidence of look ``look`` (1, 2, ... MAX_LOOKS): its share of the error is half the last's."""
    return 1 - (1 - confidence) / 2**look


def fewest_requests(share: float, target: float, confidence: float, most: int = 10_000_000) -> int:
    """Fewest independent requests (at least MIN_REQUESTS; ``most`` at the most) whose Wilson lower bound at
    ``confidence`` clears ``target`` when ``share`` of them are good (searched in 5% steps)."""
    n = MIN_REQUESTS
    while wilson(share * n, n, confidence)[0] < target and n < most:
        n += max(1, n // 20)
    return n


def requests_for(target: float, confidence: float) -> int:
    """A first run's size: :func:`fewest_requests` at an attainment halfway to 1."""
    return fewest_requests((1 + target) / 2, target, confidence, most=100_000)


def requests_to_meet(share: Share, target: float, confidence: float) -> int | None:
    """Of an INCONCLUSIVE probe: the requests (at its design effect, its share held) whose interval would
    clear ``target`` at ``confidence``; None where its share is not above the target (more cannot help)."""
    if share.share is None or share.share <= target:
        return None
    return math.ceil(fewest_requests(share.share, target, confidence) * max(share.deff, 1.0))


def first_run(target: float, confidence: float) -> int:
    """A probe's first run: sized for its first look."""
    return requests_for(target, look_confidence(confidence, 1))


@dataclass
class ProbeJudgement:
    share: Share
    verdict: ProbeVerdict


def judge(runs: Sequence[Sequence[bool]], floors: Sequence[float], target: float, confidence: float) -> ProbeJudgement:
    """The share of good outcomes over ``runs`` (each in send order), each cut into batches of its own
    correlation time, at least its floor (:func:`least_correlation` of what the run held in flight)."""
    good, total, taus = [], [], [1.0]
    for outcomes, floor in zip(runs, floors, strict=True):
        g, t, tau = data_batches(outcomes, floor)
        good += g
        total += t
        taus.append(tau)
    share = share_ci(good, total, confidence, min_deff=max(taus))
    lo, hi = share.ci
    verdict: ProbeVerdict = "MEETS" if lo >= target else "MISSES" if hi < target else "INCONCLUSIVE"
    return ProbeJudgement(share, verdict)


@dataclass
class Looks:
    """One probe's runs and its judgement after each (see the module's docstring)."""

    target: float
    confidence: float
    open_loop: bool
    first: int
    most: int
    runs: list[list[bool]] = field(default_factory=list)
    floors: list[float] = field(default_factory=list)
    judged: ProbeJudgement | None = None
    overloaded: bool = False
    in_flight: float = 0.0  # requests in flight at the probe's load: the forecast, then the most a run held
    short: bool = False  # the last run measured fewer than STEADY_MULTIPLE x what it held in flight
    fixed_budget: bool = False  # ``most`` is the user's (--max-probe-requests): never grown to BUDGET_RUNS runs

    @property
    def used(self) -> int:
        return sum(map(len, self.runs))

    @property
    def steady_run(self) -> int:
        """The fewest measured requests a run at this load needs: STEADY_MULTIPLE x its requests in flight."""
        return math.ceil(STEADY_MULTIPLE * self.in_flight)

    def next_size(self) -> int:
        """The next run's measured requests; 0 when the probe decided or spent its budget."""
        most = self.most if self.fixed_budget else max(self.most, BUDGET_RUNS * self.steady_run)
        left = most - self.used
        if left <= 0 or len(self.runs) >= MAX_LOOKS or (self.judged is not None and self.judged.verdict != "INCONCLUSIVE"):
            return 0
        if self.judged is None:
            return min(max(self.first, self.steady_run), left)
        grow = (z_two_sided(self.look_confidence(len(self.runs) + 1)) / z_two_sided(self.look_confidence(1))) ** 2
        need = math.ceil(self.first * self.judged.share.deff * grow) - self.used
        return min(max(self.first, need, self.steady_run if self.short else 0), left)

    def add(
        self, outcomes: list[bool], in_flight: float, overloaded: bool = False, held: float | None = None
    ) -> ProbeJudgement:
        """Judges the probe after one more run (``outcomes`` in send order, ``in_flight`` the client's mean
        in flight, ``held`` what it held in flight by the client or the server, load.window.held_in_flight: the
        run's length rule)."""
        held = in_flight if held is None else held
        self.runs.append(outcomes)
        self.floors.append(least_correlation(in_flight, self.open_loop))
        self.in_flight = max(self.in_flight, held)
        self.short = too_short(len(outcomes), held)
        judged = judge(self.runs, self.floors, self.target, self.look_confidence(len(self.runs)))
        self.overloaded = self.overloaded or overloaded
        if self.overloaded:
            judged = ProbeJudgement(judged.share, "MISSES")
        elif self.short and judged.verdict == "MEETS":
            judged = ProbeJudgement(judged.share, "INCONCLUSIVE")
        self.judged = judged
        return judged

    def look_confidence(self, look: int) -> float:
        return look_confidence(self.confidence, look)
