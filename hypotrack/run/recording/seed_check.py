"""Seeds that are seeds: two seeds whose runs are one and the same run count once in a verdict.

A seed that never reaches the training (a command experiment whose script takes no seed, a launcher or a
script that fixes its own) trains the same run again; counted as two seeds it would make a verdict look
twice as sure. Two different seeds sample different completions from the first step, so their first
logged step differs; a seed whose first step is bit-for-bit another's, in every arm, is a repeat of it.
Whatever started the arms, this reads only what they logged.
"""

from __future__ import annotations

import re

from hypotrack.effect import Series

# Fewest metrics the two first steps must share before they are compared (a single coarse reading can tie).
MIN_SHARED = 2
# Readings of the clock and the machine, which differ between two runs of the same training.
MACHINE_READINGS = re.compile(r"time|runtime|per_second|seconds|memory|(^|/)mem_|throughput")


def first_step(metrics: dict[str, list[tuple[int, float]]]) -> dict[str, float]:
    """Each metric's value at the first step the run logged."""
    steps = [step for points in metrics.values() for step, _ in points]
    if not steps:
        return {}
    first = min(steps)
    return {name: value for name, points in metrics.items() for step, value in points
            if step == first and not MACHINE_READINGS.search(name)}


def repeated_seeds(series: Series, seeds: list[int]) -> dict[int, int]:
    """seed -> the earlier seed it repeats, for every seed whose first step equals that seed's in every arm."""
    repeats: dict[int, int] = {}
    for index, seed in enumerate(seeds):
        for earlier in seeds[:index]:
            if earlier not in repeats and _same_run(series, earlier, seed):
                repeats[seed] = earlier
                break
    return repeats


def _same_run(series: Series, one: int, other: int) -> bool:
    arms = [by_seed for by_seed in series.values() if one in by_seed and other in by_seed]
    if not arms:
        return False
    for by_seed in arms:
        a, b = first_step(by_seed[one]), first_step(by_seed[other])
        shared = set(a) & set(b)
        if len(shared) < MIN_SHARED or any(a[name] != b[name] for name in shared):
            return False
    return True


def without_repeats(series: Series, seeds: list[int]) -> tuple[Series, list[int], str]:
    """(the series and seeds with each repeated seed left out, a sentence naming them; "" when none)."""
    repeats = repeated_seeds(series, seeds)
    if not repeats:
        return series, seeds, ""
    kept = [seed for seed in seeds if seed not in repeats]
    trimmed = {arm: {seed: metrics for seed, metrics in by_seed.items() if seed not in repeats}
               for arm, by_seed in series.items()}
    pairs = ", ".join(f"seed {seed} repeated seed {earlier}" for seed, earlier in sorted(repeats.items()))
    note = (f" ({pairs} bit for bit: their first steps logged identical metrics, so the seed did not reach the "
            f"training; counted once, {len(kept)} distinct seed(s). A command experiment passes the seed to its "
            "script through command.seed)")
    return trimmed, kept, note
