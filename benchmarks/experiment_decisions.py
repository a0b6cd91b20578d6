"""How often seatrial's experiment rule ADOPTs, on synthetic per-start data of known spread and effect,
beside the rule a ``vllm bench sweep`` user is left with (the larger mean of runs wins).

Each trial draws per-start output tok/s for a baseline and a treatment: lognormal around 1000 tok/s with
the given between-start CV, the treatment scaled by (1 + effect). seatrial's decision is the real code
(``seatrial.experiment.decide.decisions``: Welch interval on the log values over starts, threshold the
larger of min_gain_pct 5 and the baseline's A/A split). Printed: the false-ADOPT rate of A/A plans
(effect 0; target <= 5%), and the power (ADOPT rate) at a true 10% effect.

    PYTHONPATH=src python benchmarks/experiment_decisions.py [--trials 2000]
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from seatrial.experiment.decide import decisions
from seatrial.experiment.plan import ExperimentPlan

PLAN = ExperimentPlan.model_validate(
    {
        "serve": {"command": ["engine", "--port", "{port}"]},
        "baseline": {"name": "a", "args": ["--x", "1"]},
        "treatments": [{"name": "b", "args": ["--x", "2"]}],
        "workload": {"concurrency": [8]},
        "starts": 3,
        "decide": {"profiles": {"batch": {"concurrency": 8, "metric": "output_tok_s", "min_gain_pct": 5}}},
    }
)


def levels(values: np.ndarray) -> list[dict[str, object]]:
    return [{"output_tok_s": float(v), "values": {}} for v in values]


def rates(
    cv: float, effect: float, starts: int, trials: int, rng: np.random.Generator
) -> tuple[float, float]:
    """(seatrial ADOPT rate, sweep-rule 'larger mean wins' rate)."""
    sigma = math.sqrt(math.log(1 + cv**2))
    ours = sweep = 0
    for _ in range(trials):
        a = 1000 * rng.lognormal(0, sigma, starts)
        b = 1000 * (1 + effect) * rng.lognormal(0, sigma, starts)
        verdict = decisions(PLAN, {"a": {8: levels(a)}, "b": {8: levels(b)}}, {})[0]["verdict"]
        ours += verdict == "ADOPT"
        sweep += b.mean() > a.mean()
    return ours / trials, sweep / trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(20261201)
    print(f"{args.trials} synthetic experiments per row; threshold = max(5%, A/A split of the baseline)")
    print(
        f"{'starts':>6} {'CV':>5} | {'A/A false ADOPT':>16} {'sweep rule':>10} | {'power @10%':>10} {'sweep rule':>10}"
    )
    worst = 0.0
    for starts in (3, 5):
        for cv in (0.02, 0.05, 0.10):
            fa, fa_sweep = rates(cv, 0.0, starts, args.trials, rng)
            pw, pw_sweep = rates(cv, 0.10, starts, args.trials, rng)
            worst = max(worst, fa)
            print(f"{starts:>6} {cv:>5.0%} | {fa:>16.1%} {fa_sweep:>10.1%} | {pw:>10.1%} {pw_sweep:>10.1%}")
    print(
        f"worst A/A false-ADOPT rate: {worst:.1%} (target <= 5%); the sweep rule adopts about half of A/A pairs"
    )


if __name__ == "__main__":
    main()
