"""Seeds that add up: a test of the same arms (apart from the seed) decides over every earlier test's seeds too.

A user who can afford two seeds today and two more tomorrow gets one verdict over four. Each finished
test keeps, in the registry, the series its verdict read (the criteria's metrics and the outcome), with
a pool key: the hypothesis's resolved arms without their seeds (run/planning/plan.py `pool_key`). A new test with
the same key reads those series back for the seeds it did not train itself; a seed trained twice counts
once, the newest reading kept. `--more-seeds K` trains the K lowest seeds no earlier test used.
"""

from __future__ import annotations

from typing import Any

from hypotrack.definitions.models import AnyOf, Hypothesis
from hypotrack.effect import OUTCOME_METRICS, Series

# Besides the criteria's metrics and the outcome, the effect reads the task reward per step (an outcome
# that cannot move) and its per-completion spread (what counts as a meaningful change).
EFFECT_INPUTS = ("task_reward", "task_reward_std")


def metrics_read(hypothesis: Hypothesis) -> set[str]:
    """Every metric the hypothesis's verdict reads."""
    names = set(EFFECT_INPUTS)
    if hypothesis.effect.outcome != "none":
        names.add(OUTCOME_METRICS[hypothesis.effect.outcome])
    for group in ("validated", "invalidated"):
        for clause in getattr(hypothesis.criteria, group):
            for criterion in clause.any if isinstance(clause, AnyOf) else [clause]:
                names.add(criterion.metric)
    return names


def kept_series(series: Series, hypothesis: Hypothesis) -> dict[str, Any]:
    """What the registry keeps of a test's series for later pooling (JSON: seeds as strings)."""
    wanted = metrics_read(hypothesis)
    return {arm: {str(seed): {m: [[s, v] for s, v in points] for m, points in metrics.items() if m in wanted}
                  for seed, metrics in seeds.items()}
            for arm, seeds in series.items()}


def pool(earlier: list[Any], series: Series, seeds: list[int]) -> tuple[Series, list[int], list[str]]:
    """(series over all seeds, all seeds, ids of the earlier tests that added seeds).

    earlier: registry rows of finished tests with the same pool key, oldest first (queries.pooled_test_runs).
    """
    merged: Series = {}
    sources: dict[int, str] = {}
    for row in earlier:
        for arm, by_seed in (row.series or {}).items():
            for seed_text, metrics in by_seed.items():
                seed = int(seed_text)
                if seed in seeds:
                    continue  # trained again now: the newest reading counts
                merged.setdefault(arm, {})[seed] = {m: [(int(s), float(v)) for s, v in points]
                                                     for m, points in metrics.items()}
                sources[seed] = row.id
    for arm, by_seed in series.items():
        merged.setdefault(arm, {}).update(by_seed)
    all_seeds = sorted(set(seeds) | set(sources))
    # Only seeds every arm has count: an earlier control-only test cannot pair with a treatment.
    arms = list(merged)
    paired = [s for s in all_seeds if all(s in merged[a] for a in arms) or s in seeds]
    used = sorted({sources[s] for s in paired if s in sources}, key=[r.id for r in earlier].index)
    return merged, paired, used


def used_seeds(earlier: list[Any]) -> list[int]:
    """The seeds earlier tests of these arms trained (rows of queries.pooled_test_runs)."""
    return sorted({int(seed) for row in earlier for by_seed in (row.series or {}).values() for seed in by_seed})


def unused_seeds(earlier: list[Any], count: int) -> list[int]:
    """The ``count`` lowest seeds no earlier test of these arms trained."""
    used = set(used_seeds(earlier))
    out, seed = [], 0
    while len(out) < count:
        if seed not in used:
            out.append(seed)
        seed += 1
    return out
