"""The verdict engine (hypotrack/verdict.py) on constructed metric series."""

from __future__ import annotations

import pytest

from hypotrack.definitions.models import Criterion, Hypothesis
from hypotrack.reading import aggregate_steps
from hypotrack.verdict import decide, evaluate_criterion

SEEDS = [0, 1, 2]


def hyp(validated=(), invalidated=()) -> Hypothesis:
    return Hypothesis.model_validate({"id": "h90", "title": "t", "priority": "high", "statement": "s",
                                      "criteria": {"validated": list(validated), "invalidated": list(invalidated)}})


def flat(value: float, steps: int = 20) -> list[tuple[int, float]]:
    return [(s, value) for s in range(steps)]


def series(metric: str, control: dict[int, float], treatment: dict[int, float] | None = None, steps: int = 20):
    out = {"control": {seed: {metric: flat(v, steps)} for seed, v in control.items()}}
    if treatment is not None:
        out["treatment"] = {seed: {metric: flat(v, steps)} for seed, v in treatment.items()}
    return out


def crit(**kw) -> Criterion:
    return Criterion.model_validate({"metric": "reward", "threshold": 0.05, **kw})


DELTA_UP = {"metric": "reward", "arm": "delta", "op": ">=", "threshold": 0.05, "seeds": "majority"}
DELTA_FLAT = {"metric": "reward", "arm": "delta", "abs": True, "op": "<", "threshold": 0.02, "seeds": "all"}


# --------------------------------------------------------------------------- step aggregation


def test_step_aggregations():
    points = [(s, float(s)) for s in range(10)]  # 0..9
    assert aggregate_steps(points, "mean", 3) == pytest.approx(4.5)
    assert aggregate_steps(points, "mean_last", 3) == pytest.approx(8.0)
    assert aggregate_steps(points, "mean_first", 3) == pytest.approx(1.0)
    assert aggregate_steps(points, "last", 3) == 9.0
    assert aggregate_steps(points, "first", 3) == 0.0
    assert aggregate_steps(points, "max", 3) == 9.0
    assert aggregate_steps(points, "min", 3) == 0.0
    assert aggregate_steps(points, "slope", 3) == pytest.approx(1.0)
    assert aggregate_steps([(s, 2.0 - 0.5 * s) for s in range(6)], "slope", 1) == pytest.approx(-0.5)


def test_growth_reads_a_tenth_of_a_long_run_at_each_end():
    # A level series that spikes every 37 steps: ten rows of 2000 at each end read whatever the spikes there read; a
    # tenth of the run reads its level, as logged and every other row.
    level = [(s, 1.0 if s % 37 else 30.0) for s in range(2000)]
    assert aggregate_steps(level, "growth", 10) == pytest.approx(1.0, abs=0.2)
    assert aggregate_steps(level[1::2], "growth", 10) == pytest.approx(1.0, abs=0.2)
    assert aggregate_steps(level[1:21], "growth", 10) == pytest.approx(1.0)  # a short run: k, at most half
    falls = [(s, 1.0 if s < 1800 else 0.1) for s in range(2000)]  # a tenth still ends where the run ends
    assert aggregate_steps(falls, "growth", 10) == pytest.approx(0.1)


def test_slope_t_is_the_same_whatever_the_metric_scale_and_separates_a_climb_from_noise():
    import random

    rng = random.Random(0)
    noise = [(s, rng.random()) for s in range(30)]  # a judge answering at random: no trend
    scaled = [(s, 10.0 * v) for s, v in noise]  # the same judge on a 0-10 scale
    assert abs(aggregate_steps(noise, "slope_t", 1)) < 3
    assert aggregate_steps(scaled, "slope_t", 1) == pytest.approx(aggregate_steps(noise, "slope_t", 1))
    assert aggregate_steps(scaled, "slope", 1) == pytest.approx(10 * aggregate_steps(noise, "slope", 1))
    climb = [(s, 0.02 * s + 0.1 * v) for s, v in noise]  # a reward the policy learns to collect
    assert aggregate_steps(climb, "slope_t", 1) > 3
    assert aggregate_steps([(0, 1.0), (1, 2.0)], "slope_t", 1) is None  # two points: no noise estimate
    assert aggregate_steps([(s, 0.5) for s in range(5)], "slope_t", 1) == 0.0
    assert aggregate_steps([(s, float(s)) for s in range(5)], "slope_t", 1) == float("inf")


def test_the_line_fit_gives_scipys_slope_and_standard_error():
    """verdict.line_fit stands in for scipy.stats.linregress (whose import is most of triage's time budget):
    the same slope and stderr on noisy and uneven series, and on a nearly exact line the stderr of exact
    rational arithmetic (scipy computes it from 1 - r**2, which loses digits there)."""
    import math
    import random
    from fractions import Fraction

    from scipy.stats import linregress

    from hypotrack.reading import line_fit

    def exact(xs, ys):
        X, Y = [Fraction(x) for x in xs], [Fraction(y) for y in ys]
        xm, ym = sum(X) / len(X), sum(Y) / len(Y)
        sxx = sum((x - xm) ** 2 for x in X)
        slope = sum((x - xm) * (y - ym) for x, y in zip(X, Y)) / sxx
        residual = sum((y - ym - slope * (x - xm)) ** 2 for x, y in zip(X, Y))
        return float(slope), math.sqrt(residual / (len(X) - 2) / sxx)

    rng = random.Random(3)
    for n in (3, 8, 50, 500):
        xs = sorted(rng.sample(range(5 * n), n))
        for ys in ([rng.gauss(0, 1) for _ in xs], [0.01 * x + rng.random() for x in xs]):
            fit = linregress(xs, ys)
            assert line_fit(xs, ys) == pytest.approx((fit.slope, fit.stderr), rel=1e-6)
        steep = [-40.0 * x + rng.gauss(0, 1e-3) for x in xs]
        assert line_fit(xs, steep) == pytest.approx(exact(xs, steep), rel=1e-6)


def test_step_aggregation_sorts_steps_and_skips_non_finite():
    points = [(3, 3.0), (0, 0.0), (2, float("nan")), (1, 1.0), (4, float("inf"))]
    assert aggregate_steps(points, "last", 1) == 3.0
    assert aggregate_steps(points, "mean", 1) == pytest.approx(4 / 3)
    assert aggregate_steps([], "mean", 1) is None
    assert aggregate_steps([(1, 1.0)], "slope", 1) is None  # one point has no slope
    assert aggregate_steps([(1, 1.0), (1, 2.0)], "slope", 1) is None
    with pytest.raises(ValueError):
        aggregate_steps([(1, 1.0)], "median", 1)


# --------------------------------------------------------------------------- verdicts


def test_a_reading_at_its_threshold_is_not_decided_by_floating_point_rounding():
    """A sampling temperature of 0.7 logged at three steps means 0.6999999999999998; a value through float32
    reads 0.699999988: neither is below a threshold of 0.7, and both are at it. 0 stays exact."""
    from hypotrack.reading import compare

    three_steps = aggregate_steps([(1, 0.7), (2, 0.7), (3, 0.7)], "mean", 1)
    assert three_steps != 0.7  # what plain arithmetic gives
    for value in (three_steps, 0.699999988079071):
        assert not compare(value, "<", 0.7) and compare(value, "<=", 0.7) and compare(value, ">=", 0.7)
        assert compare(value, "==", 0.7) and not compare(value, ">", 0.7)
    assert compare(0.6999, "<", 0.7) and compare(1e-12, ">", 0.0) and not compare(0.0, ">", 0.0)


def test_validated_when_treatment_improves():
    data = series("reward", {0: 0.3, 1: 0.3, 2: 0.3}, {0: 0.5, 1: 0.45, 2: 0.52})
    verdict = decide(hyp([DELTA_UP], [DELTA_FLAT]), data, SEEDS)
    assert verdict.status == "validated"
    assert 0 < verdict.confidence <= 1
    assert verdict.summary.startswith("validated: signature present: reward [delta")
    assert verdict.evidence()["criteria"][0]["per_seed"]["0"] == pytest.approx(0.2)


def test_invalidated_when_no_difference():
    data = series("reward", {0: 0.3, 1: 0.3, 2: 0.3}, {0: 0.301, 1: 0.299, 2: 0.3})
    verdict = decide(hyp([DELTA_UP], [DELTA_FLAT]), data, SEEDS)
    assert verdict.status == "invalidated" and verdict.confidence > 0


def test_inconclusive_in_between():
    data = series("reward", {0: 0.3, 1: 0.3, 2: 0.3}, {0: 0.33, 1: 0.33, 2: 0.33})
    verdict = decide(hyp([DELTA_UP], [DELTA_FLAT]), data, SEEDS)
    assert verdict.status == "inconclusive" and verdict.confidence is None
    assert verdict.summary.startswith("inconclusive:")


def test_overlapping_criteria_are_inconclusive():
    data = series("reward", {0: 0.3, 1: 0.3, 2: 0.3}, {0: 0.5, 1: 0.5, 2: 0.5})
    both = {"metric": "reward", "arm": "delta", "op": ">", "threshold": 0.0}
    verdict = decide(hyp([both], [both]), data, SEEDS)
    assert verdict.status == "inconclusive" and "overlap" in verdict.summary


@pytest.mark.parametrize("mode, passing_values, expected", [
    ("all", [1.0, 1.0, 1.0], True),
    ("all", [1.0, 1.0, 0.0], False),
    ("majority", [1.0, 1.0, 0.0], True),
    ("majority", [1.0, 0.0, 0.0], False),
    ("any", [1.0, 0.0, 0.0], True),
    ("any", [0.0, 0.0, 0.0], False),
    ("mean", [2.0, 0.0, 0.0], True),   # mean 0.67 >= 0.5 though only one seed passes
    ("mean", [0.6, 0.6, 0.0], False),  # mean 0.4 < 0.5 though a majority passes
])
def test_seed_modes(mode, passing_values, expected):
    c = crit(arm="control", seeds=mode, op=">=", threshold=0.5)
    data = series("reward", dict(enumerate(passing_values)))
    result = evaluate_criterion("validated", c, data, SEEDS)
    assert result.holds is expected
    assert decide(hyp([c.model_dump()]), data, SEEDS).status == ("validated" if expected else "inconclusive")


def test_abs_and_slope_criterion():
    rising = {"control": {seed: {"kl": [(s, -0.1 * s) for s in range(10)]} for seed in SEEDS}}
    c = crit(metric="kl", arm="control", steps="slope", abs=True, op=">", threshold=0.05, seeds="all")
    result = evaluate_criterion("validated", c, rising, SEEDS)
    assert result.holds and result.value == pytest.approx(0.1)
    assert "|kl|" in result.describe()


def test_max_aggregation_decides():
    data = {"control": {seed: {"grad_norm": [(0, 1.0), (1, 50.0), (2, 1.0)]} for seed in SEEDS}}
    c = {"metric": "grad_norm", "arm": "control", "steps": "max", "op": ">=", "threshold": 10, "seeds": "all"}
    assert decide(hyp([c]), data, SEEDS).status == "validated"
    c["steps"] = "mean_last"
    c["k"] = 1
    assert decide(hyp([c]), data, SEEDS).status == "inconclusive"


def test_any_group_holds_when_one_member_holds():
    data = {"control": {seed: {"a": flat(0.0), "b": flat(1.0)} for seed in SEEDS}}
    group = {"any": [{"metric": "a", "arm": "control", "op": ">", "threshold": 0.5},
                     {"metric": "b", "arm": "control", "op": ">", "threshold": 0.5}]}
    verdict = decide(hyp([group]), data, SEEDS)
    assert verdict.status == "validated" and len(verdict.results) == 2
    none_hold = {"any": [{"metric": "a", "arm": "control", "op": ">", "threshold": 0.5},
                         {"metric": "b", "arm": "control", "op": ">", "threshold": 5}]}
    assert decide(hyp([none_hold]), data, SEEDS).status == "inconclusive"


def test_failed_runs_make_it_inconclusive_never_validated():
    data = series("reward", {0: 0.3, 1: 0.3, 2: 0.3}, {0: 0.9, 1: 0.9, 2: 0.9})
    verdict = decide(hyp([DELTA_UP], [DELTA_FLAT]), data, SEEDS, failed_runs={"treatment/2": "CUDA OOM"})
    assert verdict.status == "inconclusive" and verdict.confidence is None
    assert "failed runs" in verdict.summary and "treatment/2: CUDA OOM" in verdict.summary
    assert verdict.evidence()["failed_runs"] == {"treatment/2": "CUDA OOM"}
    assert "cause" not in verdict.summary  # an error that names no cause adds nothing


def test_a_failed_run_whose_error_is_a_known_cause_points_to_its_hypothesis():
    data = series("reward", {0: 0.3, 1: 0.3, 2: 0.3}, {0: 0.9, 1: 0.9, 2: 0.9})
    error = "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn"
    verdict = decide(hyp([DELTA_UP], [DELTA_FLAT]), data, SEEDS, failed_runs={"control/0": error, "control/1": error})
    assert verdict.status == "inconclusive"  # a crash decides nothing by itself
    assert verdict.summary.count("the error is h19's cause: the loss reaches no trainable weight") == 1
    assert "`hypotrack run h19` tests it" in verdict.summary
    own = decide(hyp([DELTA_UP], [DELTA_FLAT]).model_copy(update={"id": "h19"}), data, SEEDS,
                 failed_runs={"control/0": error})
    assert "the error is the cause this hypothesis names: the loss reaches no trainable weight" in own.summary


def test_missing_metric_is_inconclusive_with_reason():
    data = series("loss", {0: 0.3, 1: 0.3, 2: 0.3}, {0: 0.9, 1: 0.9, 2: 0.9})
    verdict = decide(hyp([DELTA_UP]), data, SEEDS)
    assert verdict.status == "inconclusive"
    assert "no data" in verdict.summary and "reward not logged in treatment seed 0" in verdict.summary
    assert verdict.results[0].missing


def test_missing_arm_seed_counts_against_all():
    data = series("reward", {0: 1.0, 1: 1.0})  # seed 2 never logged
    c = {"metric": "reward", "arm": "control", "op": ">=", "threshold": 0.5, "seeds": "all"}
    result = evaluate_criterion("validated", Criterion.model_validate(c), data, SEEDS)
    assert not result.holds and result.per_seed[2] is None and "seed 2" in result.missing
    c["seeds"] = "majority"
    assert evaluate_criterion("validated", Criterion.model_validate(c), data, SEEDS).holds


def test_confidence_grows_with_agreeing_seeds_and_is_never_certain():
    """One meaning: the chance one more seed reads the same way, (k + 1) / (n + 2) over agreeing seeds."""
    h = hyp([DELTA_UP])
    five = [0, 1, 2, 3, 4]
    data5 = series("reward", dict.fromkeys(five, 0.3), dict.fromkeys(five, 0.8))
    one = series("reward", {0: 0.3}, {0: 0.8})
    three = series("reward", dict.fromkeys(SEEDS, 0.3), {0: 0.86, 1: 0.80, 2: 0.92})
    assert decide(h, one, [0]).confidence == round(2 / 3, 3)
    assert decide(h, three, SEEDS).confidence == 0.8
    assert decide(h, data5, five).confidence == round(6 / 7, 3)


def test_exact_inclusive_bound_counts_as_agreeing():
    data = {"control": {seed: {"passed": flat(1.0)} for seed in SEEDS}}
    c = {"metric": "passed", "arm": "control", "op": ">=", "threshold": 1.0, "seeds": "all"}
    verdict = decide(hyp([c]), data, SEEDS)
    assert verdict.status == "validated" and verdict.confidence == 0.8


# --------------------------------------------------------------------------- margins

SHARE_PRESENT = {"metric": "diag/kl/grad_share", "arm": "control", "op": ">=", "threshold": 0.25, "seeds": "majority"}
SHARE_ABSENT = {"metric": "diag/kl/grad_share", "arm": "control", "op": "<", "threshold": 0.25, "seeds": "majority"}


def test_a_reading_within_its_seeds_noise_of_the_threshold_is_undecided_and_names_the_seeds_that_decide_it():
    """0.18 and 0.24, both under 0.25: the mean 0.21 is 0.04 from the threshold and the two seeds' spread is 0.042."""
    h = Hypothesis.model_validate({**hyp([SHARE_PRESENT], [SHARE_ABSENT]).model_dump(), "effect": {"outcome": "none"}})
    verdict = decide(h, series("diag/kl/grad_share", {0: 0.18, 1: 0.24}), [0, 1])
    assert verdict.status == "inconclusive" and verdict.signature == "undecided", verdict.summary
    assert "within its seeds' noise of the threshold" in verdict.summary
    # 2 (sd / distance)^2 = 2.25: 3 seeds in all, 1 more
    assert "`hypotrack run h90 --more-seeds 1` would decide it" in verdict.summary, verdict.summary


def test_a_reading_clear_of_its_threshold_decides_and_one_seed_has_no_noise_to_measure():
    h = Hypothesis.model_validate({**hyp([SHARE_PRESENT], [SHARE_ABSENT]).model_dump(), "effect": {"outcome": "none"}})
    assert decide(h, series("diag/kl/grad_share", {0: 0.20, 1: 0.22}), [0, 1]).status == "invalidated"
    assert decide(h, series("diag/kl/grad_share", {0: 0.24}), [0]).status == "invalidated"
    # identical seeds: no spread, the reading decides however close it is
    assert decide(h, series("diag/kl/grad_share", {0: 0.2499, 1: 0.2499}), [0, 1]).status == "invalidated"


def test_an_any_of_clause_stands_on_the_member_that_is_clear_of_its_threshold():
    clear = {"metric": "reward", "arm": "control", "op": ">=", "threshold": 0.5, "seeds": "majority"}
    h = Hypothesis.model_validate({**hyp([{"any": [SHARE_PRESENT, clear]}]).model_dump(), "effect": {"outcome": "none"}})
    near = series("diag/kl/grad_share", {0: 0.26, 1: 0.32})
    assert decide(h, near, [0, 1]).status == "inconclusive"  # the near member alone holds the clause
    near["control"][0]["reward"], near["control"][1]["reward"] = flat(0.9), flat(0.95)
    assert decide(h, near, [0, 1]).status == "validated"
