import pytest
import torch

from hypotrack.hooks.base import RolloutBatch
from hypotrack.hooks.truncation import TruncationHook


def make(prompt_lens, P=10, completions=None, columns=None, eos=1):
    B = len(prompt_lens)
    pm = torch.zeros(B, P, dtype=torch.long)
    for i, n in enumerate(prompt_lens):
        pm[i, P - n:] = 1  # left padded
    cids = torch.tensor(completions if completions is not None else [[5, eos, 0]] * B)
    return RolloutBatch(
        prompt_ids=torch.full((B, P), 7), prompt_mask=pm, completion_ids=cids,
        completion_mask=torch.ones_like(cids), advantages=torch.zeros(B), rewards_per_func=torch.zeros(B, 1),
        reward_weights=torch.ones(1), reward_func_names=["r"], num_generations=2, scale_rewards="group",
        pad_token_id=0, eos_token_id=eos, prompts_text=[""] * B, completions_text=[""] * B, columns=columns or {},
    )


def test_lengths_and_no_columns():
    out = TruncationHook().on_rollout(make([4, 8, 10, 6]), 0)
    assert out["prompt_len_mean"] == pytest.approx(7.0)
    assert out["prompt_len_max"] == 10.0
    assert 9.0 <= out["prompt_len_p95"] <= 10.0
    assert out["truncation_known"] == 0.0 and out["truncation_rate"] == 0.0
    assert out["answer_known_share"] == 0.0 and "answer_survival" not in out
    assert out["completion_clipped_ratio"] == 0.0


def test_truncation_and_answer_survival_from_offsets():
    cols = {
        "prompt_full_length": [10, 20, 30, 10],
        "prompt_truncated": [False, True, True, False],
        "answer_start": [5, 2, 40, 0],
        "answer_end": [9, 6, 50, 3],
        # kept char ranges of the original prompt (left truncation keeps the tail)
        "prompt_kept_chars": [(0, 60), (10, 60), (30, 60), (0, 20)],
    }
    out = TruncationHook().on_rollout(make([10, 10, 10, 10], columns=cols), 0)
    assert out["truncation_rate"] == pytest.approx(0.5)
    assert out["tokens_lost_mean"] == pytest.approx((0 + 10 + 20 + 0) / 4)
    assert out["answer_known_share"] == 1.0
    assert out["answer_survival"] == pytest.approx(0.75)  # row 1 lost its answer span


def test_explicit_column_and_inferred_truncation():
    cols = {"prompt_full_length": [12, 10], "answer_survived": [False, None], "answer_start": [None, 1],
            "answer_end": [None, 4]}
    out = TruncationHook().on_rollout(make([10, 10], columns=cols), 0)
    assert out["truncation_rate"] == pytest.approx(0.5)  # full length 12 > 10 kept
    assert out["answer_survival"] == pytest.approx(0.5)  # row 0 explicit False, row 1 untruncated => kept


def test_clipped_completions():
    out = TruncationHook().on_rollout(make([3, 3], completions=[[5, 5, 5], [5, 1, 0]]), 0)
    assert out["completion_clipped_ratio"] == pytest.approx(0.5)
