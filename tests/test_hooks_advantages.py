import math

import pytest
import torch

from hypotrack.grpo_math import group_advantages, normalize_then_sum
from hypotrack.hooks.advantages import AdvantagesHook
from hypotrack.hooks.base import RolloutBatch

torch.set_num_threads(1)


def trl_advantages(rewards, G, scale):
    return group_advantages(rewards, G, scale)[0]


def trl_advantages_normalize_then_sum(rpf, w, G):
    return normalize_then_sum(rpf, w, G).advantages


def batch_for(rewards, G, scale="group", weights=None, aggregation="sum_then_normalize"):
    rpf = torch.tensor(rewards, dtype=torch.float32).reshape(len(rewards), -1)
    w = torch.ones(rpf.size(1)) if weights is None else torch.tensor(weights)
    if aggregation == "normalize_then_sum":
        advantages = trl_advantages_normalize_then_sum(rpf, w, G)
    else:
        advantages = trl_advantages((rpf * w).nansum(1), G, scale)
    B = rpf.size(0)
    return RolloutBatch(
        prompt_ids=torch.ones(B, 3, dtype=torch.long), prompt_mask=torch.ones(B, 3, dtype=torch.long),
        completion_ids=torch.ones(B, 2, dtype=torch.long), completion_mask=torch.ones(B, 2, dtype=torch.long),
        advantages=advantages, rewards_per_func=rpf, reward_weights=w,
        reward_func_names=[f"f{i}" for i in range(rpf.size(1))], num_generations=G, scale_rewards=scale,
        pad_token_id=0, eos_token_id=1, prompts_text=[""] * B, completions_text=[""] * B, aggregation=aggregation,
    )


def test_trl_formula_by_hand():
    r = torch.tensor([0.0, 1.0, 1.0, 1.0])
    mean, std = 0.75, 0.5  # Bessel std of [0,1,1,1]
    expected = (r - mean) / (std + 1e-4)
    assert torch.allclose(trl_advantages(r, 4, "group"), expected)
    assert torch.allclose(trl_advantages(r, 4, "none"), r - mean)
    # batch mode: group mean, batch std
    r2 = torch.tensor([0.0, 1.0, 2.0, 4.0])
    bstd = r2.std()
    gmean = torch.tensor([0.5, 0.5, 3.0, 3.0])
    assert torch.allclose(trl_advantages(r2, 2, "batch"), (r2 - gmean) / (bstd + 1e-4))


def test_near_constant_group_blows_up_under_group_only():
    rewards = [0.5] * 7 + [0.501] + [0.0, 1.0] * 4  # group 0 near-constant, group 1 real signal
    out = AdvantagesHook().on_rollout(batch_for(rewards, 8), step=0)
    assert out["near_zero_std_share"] == pytest.approx(0.5)
    assert out["group_std_min"] < 1e-3
    # the tied group gets a unit-scale advantage (~1.9) from a 0.001 reward difference
    assert out["near_zero_std_abs_adv_max"] > 1.5
    assert out["abs_max_none"] <= 0.5 + 1e-6  # 'none' keeps raw reward scale
    none_only_tied = AdvantagesHook().on_rollout(batch_for([0.5] * 7 + [0.501], 8), step=0)
    assert none_only_tied["abs_max_group"] > 1000 * none_only_tied["abs_max_none"]
    assert out["recompute_max_abs_diff"] < 1e-6
    assert all(math.isfinite(v) for v in out.values())


def test_a_tie_breaker_is_a_noise_tie_and_a_close_continuous_score_is_not():
    """A 1e-3 tie-breaker on a 0-10 grader sits under 0.1% of the range; the odd completion of a group whose
    continuous score lands 0.02 from the others (1% of a range of 2) is near-tied but no noise tie."""
    real = [0.0, 10.0] * 4
    tie_breaker = AdvantagesHook().on_rollout(batch_for([10.0] * 7 + [10.001] + real, 8), step=0)
    assert tie_breaker["near_zero_std_abs_adv_max"] > 1.5 and tie_breaker["noise_tie_abs_adv_max"] > 1.5
    close = AdvantagesHook().on_rollout(batch_for([1.0] * 7 + [1.02] + [0.0, 2.0] * 4, 8), step=0)
    assert close["near_zero_std_abs_adv_max"] > 1.5 and close["noise_tie_abs_adv_max"] == 0.0
    nts = AdvantagesHook().on_rollout(batch_for([[10.0, 1.0]] * 7 + [[10.001, 0.0]] + [[0.0, 1.0], [10.0, 0.0]] * 4,
                                                8, aggregation="normalize_then_sum"), step=0)
    assert nts["noise_tie_abs_adv_max"] > 0.5  # per (group, function) pair under normalize_then_sum


def test_exactly_tied_group_has_zero_advantage_and_nan_rows():
    rewards = [[1.0], [1.0], [float("nan")], [0.0]]
    out = AdvantagesHook().on_rollout(batch_for(rewards, 2), step=0)
    assert out["near_zero_std_share"] == pytest.approx(1.0)  # group 0 tied; group 1 has one scorable row
    assert out["near_zero_std_abs_adv_max"] == 0.0
    assert all(math.isfinite(v) for v in out.values())


def test_mismatched_advantages_are_flagged():
    b = batch_for([0.0, 1.0, 0.0, 1.0], 2)
    b.advantages = b.advantages * 3
    assert AdvantagesHook().on_rollout(b, 0)["recompute_max_abs_diff"] > 1.0


def test_normalize_then_sum_formula_by_hand():
    # Two groups of 2, two functions: each function is z-scored within its group (a tied function gets
    # z = 0), then the weighted sum is standardised over the batch.
    rpf = torch.tensor([[0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [0.0, 2.0]])
    w = torch.tensor([1.0, 0.5])
    z = torch.empty_like(rpf)
    for rows in (slice(0, 2), slice(2, 4)):
        g = rpf[rows]
        z[rows] = (g - g.mean(0)) / (g.std(0) + 1e-4)
    summed = (z * w).sum(1)
    expected = (summed - summed.mean()) / (summed.std() + 1e-4)
    assert torch.allclose(trl_advantages_normalize_then_sum(rpf, w, 2), expected, atol=1e-6)


def test_normalize_then_sum_flags_a_near_tied_function_not_the_summed_reward():
    # Function 0 carries real signal in both groups; function 1 differs only by 1e-3 noise in group 0.
    # Summed rewards have a healthy group std, so only the per-function view sees the blow-up.
    f0 = [0.0, 1.0, 0.0, 1.0] * 2
    f1 = [0.5, 0.5, 0.5, 0.501] + [0.0, 1.0, 1.0, 0.0]
    rows = [[a, b] for a, b in zip(f0, f1)]
    nts = AdvantagesHook().on_rollout(batch_for(rows, 4, aggregation="normalize_then_sum"), step=0)
    assert nts["recompute_max_abs_diff"] < 1e-5
    assert nts["near_zero_std_share"] == pytest.approx(0.25)  # 1 of 4 (group, function) pairs
    assert nts["group_std_min"] < 1e-3
    assert nts["near_zero_std_abs_adv_max"] > 0.5  # 0.001 of noise moves advantages by a unit-scale amount
    stn = AdvantagesHook().on_rollout(batch_for(rows, 4), step=0)
    assert stn["near_zero_std_share"] == 0.0  # the summed-reward view does not see it
    # A batch scored one way and checked the other way is a mismatch.
    wrong = batch_for(rows, 4, aggregation="normalize_then_sum")
    wrong.aggregation = "sum_then_normalize"
    assert AdvantagesHook().on_rollout(wrong, 0)["recompute_max_abs_diff"] > 0.1


def test_near_tie_is_relative_to_the_rewards_range():
    """The same run on a 0/1 verifier and on a reward model scoring 0..100 reads the same."""
    rewards = [0.5] * 7 + [0.501] + [0.0, 1.0] * 4
    small = AdvantagesHook().on_rollout(batch_for(rewards, 8), step=0)
    large = AdvantagesHook().on_rollout(batch_for([100 * r for r in rewards], 8), step=0)
    assert small["near_zero_std_share"] == large["near_zero_std_share"] == pytest.approx(0.5)
    # TRL's 1e-4 beside the std makes the blown-up advantage scale-dependent, but both are unit-scale
    assert small["near_zero_std_abs_adv_max"] > 1.5 and large["near_zero_std_abs_adv_max"] > 1.5
    # a group spread of 0.05 on a 0..1 range is a real difference, not a tie
    real = AdvantagesHook().on_rollout(batch_for([0.45, 0.55] * 4 + [0.0, 1.0] * 4, 8), step=0)
    assert real["near_zero_std_share"] == 0.0
