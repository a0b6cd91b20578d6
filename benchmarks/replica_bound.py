"""Does the capacity reported over fresh starts hold on a fresh replica? (issue 38 item 6)

Each start of the same deployment is a little faster or slower (start-to-start speed spread ``s``, log-normal:
5% and 10%). Each start's search reports a lower bound of that start's capacity: the highest point of its
search grid at or below it (a grid of relative step ``--precision``, its position drawn at random per
search, as capacity_accuracy.py draws it). A fresh replica is one more start. Compared on the same draws:

- ``prediction bound``: seatrial's ``replica_bound`` over N starts (capacity.replica: lower one-sided
  prediction bound on log capacity at ``--confidence``);
- ``geometric mean``: the mean of the starts' log bounds (experiment's per-setting capacity before);
- ``one start``: the first start's bound alone (``capacity --url``).

Printed per spread and N: the share of trials whose reported capacity is at or below the fresh replica's
true capacity (with its 95% Wilson interval; target >= 90%) and the median reported / fresh truth.

    PYTHONPATH=src python benchmarks/replica_bound.py [--trials 20000]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seatrial.capacity.replica import StartCapacity, replica_bound
from seatrial.stats.proportions import wilson


def searched(true: np.ndarray, precision: float, rng: np.random.Generator) -> np.ndarray:
    """Each search's bound: the highest point of a randomly placed geometric grid at or below the truth."""
    step = math.log1p(precision)
    offset = rng.uniform(0, step, true.shape)
    return np.exp(np.floor((np.log(true) - offset) / step) * step + offset)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=20_000)
    ap.add_argument("--precision", type=float, default=0.05)
    ap.add_argument("--confidence", type=float, default=0.95)
    a = ap.parse_args()
    rng = np.random.default_rng(11)
    print(f"{a.trials} trials per row; grid step {a.precision:.0%}; prediction bound at {a.confidence:.0%}")
    for spread in (0.05, 0.10):
        for n in (3, 4):
            true = np.exp(rng.normal(math.log(100.0), spread, (a.trials, n + 1)))
            found = searched(true[:, :n], a.precision, rng)
            fresh = true[:, n]
            rows = {
                "prediction bound": np.array([
                    replica_bound([StartCapacity(float(v), 1.0) for v in row], a.confidence).value for row in found
                ]),
                "geometric mean": np.exp(np.log(found).mean(axis=1)),
                "one start": found[:, 0],
            }  # fmt: skip
            print(f"spread {spread:.0%}, {n} starts:")
            for label, reported in rows.items():
                held = int((reported <= fresh).sum())
                lo, hi = wilson(held, a.trials)
                ok = "met" if lo >= 0.9 else "NOT met" if hi < 0.9 else "not shown"
                print(f"  {label:<17} at or below a fresh replica {held / a.trials:.1%} [{lo:.1%}, {hi:.1%}] "
                      f"(target >= 90%: {ok}); median / fresh truth {np.median(reported / fresh):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
