"""The treatment effect (hypotrack/effect.py) and the two-part verdict on constructed series."""

from __future__ import annotations

import pytest
from scipy import stats

from hypotrack.definitions.models import Hypothesis
from hypotrack.effect import ALPHA, detectable_effect, measure, seeds_to_decide, sequential_levels
from hypotrack.verdict import decide, not_applicable

SEEDS = [0, 1, 2, 3, 4]
PRESENT = {"metric": "diag/x", "arm": "control", "steps": "mean", "op": ">", "threshold": 0.5, "seeds": "all"}
ABSENT = {"metric": "diag/x", "arm": "control", "steps": "mean", "op": "<=", "threshold": 0.5, "seeds": "all"}


def hyp(**extra) -> Hypothesis:
    return Hypothesis.model_validate({"id": "h90", "title": "t", "priority": "high", "statement": "s",
                                      "criteria": {"validated": [PRESENT], "invalidated": [ABSENT]}, **extra})


def runs(signature: float, control: dict[int, float], treatment: dict[int, float] | None, spread: float = 0.5,
         steps: int = 20):
    """Series with a constant diagnostic `diag/x` in control and a constant task reward per seed."""
    def arm(rewards, diag):
        return {seed: {"task_reward": [(s, r) for s in range(1, steps + 1)],
                       "task_reward_std": [(s, spread) for s in range(1, steps + 1)],
                       **({"diag/x": [(s, diag) for s in range(1, steps + 1)]} if diag is not None else {})}
                for seed, r in rewards.items()}
    out = {"control": arm(control, signature)}
    if treatment is not None:
        out["treatment"] = arm(treatment, None)
    return out


def test_interval_is_scipys_paired_t_interval():
    control = {0: 0.50, 1: 0.55, 2: 0.45, 3: 0.52, 4: 0.48}
    treatment = {0: 0.62, 1: 0.70, 2: 0.58, 3: 0.61, 4: 0.66}
    effect = measure(runs(1.0, control, treatment), SEEDS, "task_reward", 10, 0.1)
    result = stats.ttest_rel(list(treatment.values()), list(control.values()))
    interval = result.confidence_interval(0.95)
    assert effect.mean == pytest.approx(0.134)
    assert (effect.low, effect.high) == (pytest.approx(interval.low), pytest.approx(interval.high))
    assert effect.meaningful == pytest.approx(0.05)  # 0.1 x the task reward's per-completion std 0.5
    assert effect.verdict == "helps" and (effect.better, effect.worse) == (5, 0)
    assert effect.detectable == pytest.approx(detectable_effect(stats.tstd([0.12, 0.15, 0.13, 0.09, 0.18]), 5))


def test_no_effect_and_noise_are_told_apart():
    control = dict.fromkeys(SEEDS, 0.5)
    flat = measure(runs(1.0, control, {0: 0.50, 1: 0.51, 2: 0.49, 3: 0.50, 4: 0.50}), SEEDS, "task_reward", 10, 0.1)
    assert flat.verdict == "no_help" and flat.high < flat.meaningful
    noisy = measure(runs(1.0, control, {0: 0.9, 1: 0.2, 2: 0.7, 3: 0.3, 4: 0.55}), SEEDS, "task_reward", 10, 0.1)
    assert noisy.verdict == "undetermined" and noisy.low < 0 < noisy.high
    assert noisy.seeds_needed is None or noisy.seeds_needed > 5
    assert "seeds" in noisy.reason
    worse = measure(runs(1.0, control, dict.fromkeys(SEEDS, 0.3)), SEEDS, "task_reward", 10, 0.1)
    assert worse.verdict == "no_help" and worse.mean == pytest.approx(-0.2)


def test_seeds_to_decide_shrinks_with_the_target():
    assert seeds_to_decide(0.1, 0.05, 3) > seeds_to_decide(0.1, 0.2, 3)
    assert seeds_to_decide(0.0, 0.05, 3) == 3
    assert seeds_to_decide(1.0, 1e-4, 3) is None  # beyond 64 seeds


def test_one_seed_has_no_interval():
    effect = measure(runs(1.0, {0: 0.5}, {0: 0.8}), [0], "task_reward", 10, 0.1)
    assert effect.verdict == "undetermined" and effect.low is None and "--seeds 3" in effect.reason


@pytest.mark.parametrize("signature, treatment, status, words", [
    (1.0, {0: 0.70, 1: 0.72, 2: 0.69, 3: 0.71, 4: 0.73}, "validated", "the fix is confirmed"),
    (1.0, {0: 0.50, 1: 0.51, 2: 0.50, 3: 0.49, 4: 0.50}, "partial", "signature is present"),
    (0.0, {0: 0.70, 1: 0.72, 2: 0.69, 3: 0.71, 4: 0.73}, "partial", "signature is absent"),
    (0.0, {0: 0.50, 1: 0.51, 2: 0.50, 3: 0.49, 4: 0.50}, "invalidated", "signature absent"),
    (0.0, {0: 0.9, 1: 0.2, 2: 0.7, 3: 0.3, 4: 0.55}, "invalidated", "too noisy to tell"),
    # A clear signature is not thrown away because the seeds cannot decide the effect yet.
    (1.0, {0: 0.9, 1: 0.2, 2: 0.7, 3: 0.3, 4: 0.55}, "validated", "on the signature alone"),
])
def test_two_part_status(signature, treatment, status, words):
    verdict = decide(hyp(), runs(signature, dict.fromkeys(SEEDS, 0.5), treatment), SEEDS)
    assert verdict.status == status, verdict.summary
    assert words in verdict.summary
    assert verdict.evidence()["effect"]["verdict"] in ("helps", "no_help", "undetermined")
    assert len(verdict.headline) <= 100 and verdict.headline.startswith(status)


def test_two_seeds_with_a_clear_signature_validate_on_it_and_say_what_more_seeds_add():
    verdict = decide(hyp(), runs(1.0, {0: 0.5, 1: 0.5}, {0: 0.62, 1: 0.55}), [0, 1])
    assert verdict.status == "validated" and verdict.signature_only, verdict.summary
    assert verdict.basis == "signature" and verdict.confidence == 0.75  # (2 + 1) / (2 + 2)
    assert "treatment better on 2/2 seeds" in verdict.summary
    assert "--more-seeds" in verdict.summary and "--more-seeds" not in verdict.headline
    assert verdict.headline == "validated (signature only): x 1 > 0.5; fix undecided, 2/2 seeds better"


def test_confidence_is_the_rule_of_succession_over_agreeing_seeds():
    confirmed = decide(hyp(), runs(1.0, dict.fromkeys(SEEDS, 0.5), {0: 0.70, 1: 0.72, 2: 0.69, 3: 0.71, 4: 0.73}),
                       SEEDS)
    assert confirmed.basis == "signature + effect" and confirmed.confidence == round(6 / 7, 3)
    mixed = {"metric": "diag/x", "arm": "control", "steps": "mean", "op": ">", "threshold": 0.5, "seeds": "majority"}
    data = runs(1.0, dict.fromkeys(SEEDS, 0.5), None)
    data["control"][4]["diag/x"] = [(s, 0.1) for s in range(1, 21)]  # one seed disagrees
    majority = decide(Hypothesis.model_validate({"id": "h90", "title": "t", "priority": "high", "statement": "s",
                                                 "criteria": {"validated": [mixed]}}), data, SEEDS)
    assert majority.status == "validated" and majority.confidence == round(5 / 7, 3)


@pytest.mark.parametrize("control, treatment, why", [
    ({0: 0.0, 1: 0.0}, {0: 0.0, 1: 0.0}, "floor or the ceiling"),
    ({0: 1.0, 1: 1.0}, {0: 1.0, 1: 1.0}, "floor or the ceiling"),
])
def test_an_outcome_that_cannot_move_is_not_measurable_and_the_signature_decides(control, treatment, why):
    verdict = decide(hyp(), runs(1.0, control, treatment, spread=0.0), [0, 1])
    assert verdict.effect.verdict == "not_measurable" and why in verdict.effect.reason
    assert verdict.status == "validated" and "does not help" not in verdict.summary
    assert verdict.headline.endswith("effect not measurable")


def test_arms_that_trained_identically_measure_nothing():
    data = runs(0.0, {0: 0.5, 1: 0.5}, {0: 0.5, 1: 0.5})
    for seed, value in ((0, 0.3), (1, 0.6)):  # the same moving series in both arms
        for arm in ("control", "treatment"):
            data[arm][seed]["task_reward"] = [(s, value + 0.01 * s) for s in range(1, 21)]
    verdict = decide(hyp(), data, [0, 1])
    assert verdict.effect.verdict == "not_measurable" and "trained identically" in verdict.effect.reason
    assert verdict.status == "invalidated"


def test_without_a_treatment_arm_the_signature_decides_and_says_so():
    verdict = decide(hyp(), runs(1.0, dict.fromkeys(SEEDS, 0.5), None), SEEDS)
    assert verdict.status == "validated" and "treatment arm was not run" in verdict.summary
    assert decide(hyp(effect={"outcome": "none"}), runs(0.0, dict.fromkeys(SEEDS, 0.5), dict.fromkeys(SEEDS, 0.9)),
                  SEEDS).status == "invalidated"


def test_unmet_requirement_is_its_own_status_with_no_confidence():
    verdict = not_applicable(["the experiment has no KL term: beta is 0"])
    assert verdict.status == "not_applicable" and verdict.confidence is None
    assert "beta is 0" in verdict.summary and verdict.headline.startswith("not applicable: ")
    assert verdict.evidence()["not_applicable"] == ["the experiment has no KL term: beta is 0"]


def test_sequential_levels_spend_alpha_over_the_looks():
    for max_seeds in (2, 3, 8, 10, 64):
        levels = sequential_levels(max_seeds)
        assert sorted(levels) == list(range(2, max_seeds + 1))
        assert sum(levels.values()) == pytest.approx(ALPHA)
        assert all(level >= 0 for level in levels.values())
        assert list(levels.values()) == sorted(levels.values()) or max_seeds <= 3  # later looks spend more
    assert sequential_levels(2) == {2: pytest.approx(ALPHA)}  # one look: the plain 95% interval


def test_the_sequential_rule_widens_the_interval_of_an_early_look():
    control, treatment = {0: 0.5, 1: 0.5, 2: 0.5}, {0: 0.62, 1: 0.70, 2: 0.58}
    fixed = measure(runs(1.0, control, treatment), [0, 1, 2], "task_reward", 10, 0.1)
    looked = measure(runs(1.0, control, treatment), [0, 1, 2], "task_reward", 10, 0.1, max_seeds=10)
    assert looked.level < fixed.level and looked.low < fixed.low and looked.high > fixed.high
