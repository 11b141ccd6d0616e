"""How often does `--seeds auto` claim a treatment helps when it does not, and how many seeds does it use?

Simulates paired experiments the way `hypotrack run --seeds auto --max-seeds N` runs them: two seeds
first, then one more at a time, each look deciding with hypotrack.effect.measure (the sequential rule)
and stopping once the effect is decided (helps or does not help) or N seeds are in. Each seed's
treatment-minus-control difference is drawn from a normal distribution with the given true effect, in
units of its standard deviation; the task reward's spread is 1, so "meaningful" is 0.1 sd.

    python tests/tools/sequential_sim.py --trials 10000 --max-seeds 10
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from hypotrack.effect import measure

MEANINGFUL = 0.1  # hypotheses' default `effect.meaningful`, times a spread of 1


def series_for(diffs: list[float]) -> dict:
    """Series whose task reward per seed differs between the arms by ``diffs`` (a step each, spread 1)."""
    def arm(values: list[float]) -> dict:
        return {seed: {"task_reward": [(1, v), (2, v + 0.5)], "task_reward_std": [(1, 1.0)]}
                for seed, v in enumerate(values)}

    control = [0.0] * len(diffs)
    return {"control": arm(control), "treatment": arm(diffs)}


def one_experiment(rng: random.Random, true_effect: float, max_seeds: int) -> tuple[str, int]:
    """(the class it ended with, seeds used)."""
    diffs = [rng.gauss(true_effect, 1.0) for _ in range(2)]
    while True:
        effect = measure(series_for(diffs), list(range(len(diffs))), "task_reward", 1, MEANINGFUL,
                         max_seeds=max_seeds)
        if effect.verdict != "undetermined" or len(diffs) >= max_seeds:
            return effect.verdict, len(diffs)
        diffs.append(rng.gauss(true_effect, 1.0))


def simulate(trials: int, true_effect: float, max_seeds: int, seed: int = 0) -> dict[str, float]:
    rng = random.Random(seed)
    outcomes = [one_experiment(rng, true_effect, max_seeds) for _ in range(trials)]
    return {"trials": trials, "true_effect_sd": true_effect, "max_seeds": max_seeds,
            "helps_rate": sum(v == "helps" for v, _ in outcomes) / trials,
            "no_help_rate": sum(v == "no_help" for v, _ in outcomes) / trials,
            "undecided_rate": sum(v == "undetermined" for v, _ in outcomes) / trials,
            "mean_seeds": statistics.fmean(n for _, n in outcomes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10000)
    parser.add_argument("--max-seeds", type=int, default=10)
    args = parser.parse_args()
    for true_effect in (0.0, 1.0):
        started = time.time()
        result = simulate(args.trials, true_effect, args.max_seeds)
        print(" ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in result.items()),
              f"({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
