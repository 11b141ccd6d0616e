import math

import torch

from hypotrack.hooks.base import RolloutBatch
from hypotrack.hooks.reward_signal import RewardSignalHook


def make(rpf, errors=None, G=2):
    rpf = torch.tensor(rpf, dtype=torch.float32)
    B, F = rpf.shape
    return RolloutBatch(
        prompt_ids=torch.ones(B, 2, dtype=torch.long), prompt_mask=torch.ones(B, 2, dtype=torch.long),
        completion_ids=torch.ones(B, 2, dtype=torch.long), completion_mask=torch.ones(B, 2, dtype=torch.long),
        advantages=torch.zeros(B), rewards_per_func=rpf, reward_weights=torch.ones(F),
        reward_func_names=["acc", "fmt", "len"][:F], num_generations=G, scale_rewards="group", pad_token_id=0,
        eos_token_id=1, prompts_text=[""] * B, completions_text=[""] * B, reward_errors=errors or {},
    )


def test_stats_correlation_errors_and_histogram(tmp_path):
    rows = [[0.0, 1.0, 3.0], [1.0, 3.0, 3.0], [0.0, 1.0, 3.0], [1.0, 3.0, 3.0]]
    h = RewardSignalHook()
    out = h.on_rollout(make(rows, errors={"fmt": 2}), 0)
    assert math.isclose(out["acc/mean"], 0.5) and math.isclose(out["acc/std"], torch.tensor([0.0, 1, 0, 1]).std().item())
    assert math.isclose(out["corr/acc__fmt"], 1.0, abs_tol=1e-9)  # fmt = 2 * acc + 1
    assert out["corr/acc__len"] == 0.0  # len is constant: undefined, reported as 0
    assert out["errors"] == 2.0 and out["fmt/errors"] == 2.0 and out["acc/errors"] == 0.0
    assert out["zero_std_group_share"] == 0.0
    out2 = h.on_rollout(make([[1.0, 1.0, 3.0], [1.0, 1.0, 3.0], [float("nan"), 1.0, 3.0], [0.0, 0.0, 3.0]]), 1)
    assert out2["zero_std_group_share"] == 0.5 and out2["acc/nan_share"] == 0.25
    assert math.isclose(out2["corr/acc__fmt"], 1.0, abs_tol=1e-9)
    assert all(math.isfinite(v) for v in out2.values())
    (png,) = h.write_artifacts(tmp_path)
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_reservoir_is_capped():
    h = RewardSignalHook(reservoir_size=5)
    for s in range(10):
        h.on_rollout(make([[float(s)], [1.0]]), s)
    assert len(h.reservoir["acc"]) == 5 and h.seen["acc"] == 20


def make_roles(task, aux, weights=(1.0, 1.0), task_index=0, G=4):
    """Two functions in the order the experiment declares them; ``task_index`` says which is the task."""
    columns = [task, aux] if task_index == 0 else [aux, task]
    batch = make([list(row) for row in zip(*columns)], G=G)
    batch.reward_weights = torch.tensor(weights if task_index == 0 else tuple(reversed(weights)))
    batch.reward_func_names = ["my_exact", "my_style"] if task_index == 0 else ["my_style", "my_exact"]
    batch.task_index = task_index
    return batch


TASK = [1.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0]


def test_role_metrics_follow_the_task_reward_whatever_its_name_or_position():
    agree = [0.5 * t for t in TASK]  # an auxiliary that agrees with the task
    for task_index in (0, 1):
        out = RewardSignalHook().on_rollout(make_roles(TASK, agree, task_index=task_index), 0)
        assert math.isclose(out["aux/task_alignment"], 1.0, abs_tol=1e-6)
        assert out["aux/untracked_share"] < 1e-6 and out["aux/count"] == 1.0
        assert math.isclose(out["task/mean"], 0.5) and math.isclose(out["aux/task_corr_min"], 1.0, abs_tol=1e-9)


def test_noise_lowers_the_alignment_and_a_wrong_sign_makes_it_negative():
    coin = [0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0]  # independent of the task within each group
    noisy = RewardSignalHook().on_rollout(make_roles(TASK, coin), 0)
    assert noisy["aux/task_alignment"] < 0.75 and noisy["aux/untracked_share"] > 0.4
    penalty = [1.0 - t for t in TASK]  # a wrong-answer penalty returned as +1
    wrong = RewardSignalHook().on_rollout(make_roles(TASK, penalty, weights=(1.0, 2.0)), 0)
    assert math.isclose(wrong["aux/task_alignment"], -1.0, abs_tol=1e-6)
    cancelled = RewardSignalHook().on_rollout(make_roles(TASK, penalty, weights=(1.0, 1.0)), 0)
    assert cancelled["aux/task_alignment"] == 0.0  # the combined reward is constant: the task's signal is gone
    tied = RewardSignalHook().on_rollout(make_roles([1.0] * 8, [1.0] * 8), 0)
    assert tied["aux/task_alignment"] == 1.0  # no differences anywhere: nothing for an auxiliary to spoil


def test_a_single_reward_function_has_no_auxiliary_roles():
    out = RewardSignalHook().on_rollout(make([[t] for t in TASK], G=4), 0)
    assert out["aux/count"] == 0.0 and "aux/std_max" not in out and out["aux/task_alignment"] == 1.0
