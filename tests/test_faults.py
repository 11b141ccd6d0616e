"""Planted faults do exactly the bug they imitate, on constructed tensors."""

from __future__ import annotations

import pytest
import torch

from hypotrack.errors import HypotrackError
from hypotrack.toy.faults import FAULTS, _jitter, apply_config, build_faults


def test_every_seed_hypothesis_has_a_fault() -> None:
    assert sorted(h for h, _ in FAULTS.values()) == ["h01", "h02", "h03", "h04", "h05", "h06"]


def test_prompt_in_loss_hands_the_prompt_back_as_completion_tokens() -> None:
    """TRL's _generate returns (prompt_ids, completion_ids, tool_mask, completions, logprobs, ...) as lists."""

    class Tokenizer:
        bos_token_id = 1

    class Trainer:
        processing_class = Tokenizer()

        def _generate(self, prompts):
            return ([[1, 5, 6, 7], [1, 8, 9]], [[20, 21, 2], [22, 2]], None, ["19", "7"], None, None, None, None)

    trainer = Trainer()
    build_faults(["prompt_in_loss"]).attach(trainer)
    prompt_ids, completion_ids, tool_mask, completions, *_ = trainer._generate(["p", "q"])
    assert prompt_ids == [[1, 5, 6, 7], [1, 8, 9]]  # the prompt itself is untouched
    assert completion_ids == [[5, 6, 7, 20, 21, 2], [8, 9, 22, 2]]  # ...and echoed into the trained tokens
    assert completions == ["19", "7"]  # the reward still scores the real completion text


def test_tiny_std_jitter_is_tiny_per_sample_and_reproducible() -> None:
    values = _jitter(200, step=3, seed=0)
    assert values.abs().max() <= 1e-3 and len(set(values.tolist())) == 200
    assert torch.equal(values, _jitter(200, step=3, seed=0)) and not torch.equal(values, _jitter(200, step=4, seed=0))


def test_faulted_rewards_change_only_what_the_bug_touches() -> None:
    class State:
        global_step = 3

    class Args:
        seed = 0

    class Trainer:
        state, args = State(), Args()
        task_reward_index = 0

    rewards = torch.tensor([[1.0, 1.0], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0]])
    tiny = build_faults(["tiny_std_rewards"]).rewards(Trainer(), rewards, [], ["a", "a", "a", "a"])
    assert torch.allclose(tiny, rewards, atol=1e-3) and not torch.equal(tiny[:, 0], rewards[:, 0])
    assert tiny[0, 0] != tiny[2, 0]  # identical completions, different noise
    assert torch.equal(tiny[:, 1], rewards[:, 1])
    noisy = build_faults(["noisy_reward_component"]).rewards(Trainer(), rewards, [], ["a"] * 4)
    assert torch.equal(noisy[:, 0], rewards[:, 0]) and set(noisy[:, 1].tolist()) <= {0.0, 1.0}  # coin flips

    class TaskSecond(Trainer):
        task_reward_index = 1  # the noise goes to the auxiliary reward, wherever the task reward sits

    flipped = build_faults(["noisy_reward_component"]).rewards(TaskSecond(), rewards.flip(1), [], ["a"] * 4)
    assert torch.equal(flipped[:, 1], rewards[:, 0])


def test_config_faults_and_unknown_names() -> None:
    arm = {"data": {"max_prompt_length": None}, "grpo": {"beta": 0.0}, "rewards": ["m:task", "m:style"],
           "reward_weights": [1.0, 0.1], "task_reward_index": 0}
    apply_config("truncate_answer", arm)
    apply_config("kl_wrong_sign", arm)  # flips the sign of the experiment's own beta; it sets none
    apply_config("noisy_reward_component", arm)
    assert arm["data"]["max_prompt_length"] == 96 and arm["grpo"]["beta"] == 0.0
    assert arm["reward_weights"] == [1.0, 1.0]  # the noise weighs as much as the task reward
    with pytest.raises(HypotrackError, match="unknown planted fault"):
        build_faults(["no_such_bug"])
