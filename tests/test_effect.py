"""The treatment effect (hypotrack/effect.py) and the two-part verdict on constructed series."""

from __future__ import annotations

import pytest
from scipy import stats

from hypotrack.effect import detectable_effect, measure, seeds_to_decide
from hypotrack.spec.models import Hypothesis
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
    assert effect.verdict == "helps" and 0.5 < effect.confidence <= 1
    assert effect.detectable == pytest.approx(detectable_effect(stats.tstd([0.12, 0.15, 0.13, 0.09, 0.18]), 5))


def test_no_effect_and_noise_are_told_apart():
    control = {s: 0.5 for s in SEEDS}
    flat = measure(runs(1.0, control, {0: 0.50, 1: 0.51, 2: 0.49, 3: 0.50, 4: 0.50}), SEEDS, "task_reward", 10, 0.1)
    assert flat.verdict == "no_help" and flat.high < flat.meaningful
    noisy = measure(runs(1.0, control, {0: 0.9, 1: 0.2, 2: 0.7, 3: 0.3, 4: 0.55}), SEEDS, "task_reward", 10, 0.1)
    assert noisy.verdict == "undetermined" and noisy.low < 0 < noisy.high
    assert noisy.seeds_needed is None or noisy.seeds_needed > 5
    assert "seeds" in noisy.reason
    worse = measure(runs(1.0, control, {s: 0.3 for s in SEEDS}), SEEDS, "task_reward", 10, 0.1)
    assert worse.verdict == "no_help" and worse.mean == pytest.approx(-0.2)


def test_seeds_to_decide_shrinks_with_the_target():
    assert seeds_to_decide(0.1, 0.05, 3) > seeds_to_decide(0.1, 0.2, 3)
    assert seeds_to_decide(0.0, 0.05, 3) == 3
    assert seeds_to_decide(1.0, 1e-4, 3) is None  # beyond 64 seeds


def test_one_seed_has_no_interval():
    effect = measure(runs(1.0, {0: 0.5}, {0: 0.8}), [0], "task_reward", 10, 0.1)
    assert effect.verdict == "undetermined" and effect.low is None and "--seeds 3" in effect.reason


@pytest.mark.parametrize("signature, treatment, status, words", [
    (1.0, {0: 0.70, 1: 0.72, 2: 0.69, 3: 0.71, 4: 0.73}, "validated", "the treatment helps"),
    (1.0, {0: 0.50, 1: 0.51, 2: 0.50, 3: 0.49, 4: 0.50}, "partial", "signature is present"),
    (0.0, {0: 0.70, 1: 0.72, 2: 0.69, 3: 0.71, 4: 0.73}, "partial", "signature is absent"),
    (0.0, {0: 0.50, 1: 0.51, 2: 0.50, 3: 0.49, 4: 0.50}, "invalidated", "signature absent"),
    (1.0, {0: 0.9, 1: 0.2, 2: 0.7, 3: 0.3, 4: 0.55}, "inconclusive", "too noisy to tell"),
])
def test_two_part_status(signature, treatment, status, words):
    verdict = decide(hyp(), runs(signature, {s: 0.5 for s in SEEDS}, treatment), SEEDS)
    assert verdict.status == status, verdict.summary
    assert words in verdict.summary
    assert verdict.evidence()["effect"]["verdict"] in ("helps", "no_help", "undetermined")


def test_without_a_treatment_arm_the_signature_decides_and_says_so():
    verdict = decide(hyp(), runs(1.0, {s: 0.5 for s in SEEDS}, None), SEEDS)
    assert verdict.status == "validated" and "treatment arm was not run" in verdict.summary
    assert decide(hyp(effect={"outcome": "none"}), runs(0.0, {s: 0.5 for s in SEEDS}, {s: 0.9 for s in SEEDS}),
                  SEEDS).status == "invalidated"


def test_unmet_requirement_is_a_decided_not_applicable_verdict():
    verdict = not_applicable(["the experiment has no KL term: beta is 0"])
    assert verdict.status == "invalidated" and "not applicable" in verdict.summary and "beta is 0" in verdict.summary
    assert verdict.evidence()["not_applicable"] == ["the experiment has no KL term: beta is 0"]
