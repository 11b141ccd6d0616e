"""h27: TRL's importance weights for vLLM's completions, summed over long completions (trl#5814).

The weights are computed here exactly as TRL 1.16's GRPOTrainer computes them (grpo_trainer.py, "Compute the
importance sampling ratio when using vLLM"): the per-token log-ratio old - sampling, masked, its sum over the
completion in the sequence modes, exp, then the cap (truncate) or the mask to 0 (mask). The runs of TRL with vLLM
generating that feed the hook the same tensors are in tests/test_vllm.py.
"""

from __future__ import annotations

import json

import pytest
import torch
from test_triage import _hypotheses, trl_entry, write_state

from hypotrack.hooks.base import RolloutBatch
from hypotrack.hooks.importance_weights import ImportanceWeightsHook

CAP = 3.0  # TRL's vllm_importance_sampling_clip_max


def trl_weights(old: torch.Tensor, sampling: torch.Tensor, mask: torch.Tensor, mode: str) -> torch.Tensor:
    diff = torch.nan_to_num((old - sampling) * mask, nan=0.0)
    ratio = torch.exp(diff.sum(dim=-1, keepdim=True) if mode.startswith("sequence") else diff)
    if mode.endswith("truncate"):
        return torch.clamp(ratio, max=CAP)
    return ratio.masked_fill(ratio > CAP, 0.0)


def rollout(length: int, gap: float, mode: str, rows: int = 16) -> RolloutBatch:
    """`rows` completions of `length` tokens whose trainer logprobs sit `gap` nats per token above vLLM's, give or
    take a tenth of it (vLLM's kernels against the trainer's)."""
    torch.manual_seed(0)
    sampling = -torch.rand(rows, length) * 2
    old = sampling + gap * (1 + 0.1 * torch.randn(rows, length))
    mask = torch.ones(rows, length)
    ids = torch.full((rows, length), 5)
    return RolloutBatch(
        prompt_ids=torch.ones(rows, 2, dtype=torch.long), prompt_mask=torch.ones(rows, 2, dtype=torch.long),
        completion_ids=ids, completion_mask=mask.long(), advantages=torch.zeros(rows),
        rewards_per_func=torch.zeros(rows, 1), reward_weights=torch.ones(1), reward_func_names=["task"],
        num_generations=4, scale_rewards="group", pad_token_id=0, eos_token_id=1, prompts_text=[""] * rows,
        completions_text=[""] * rows, old_per_token_logps=old, sampling_per_token_logps=sampling,
        importance_sampling_ratio=trl_weights(old, sampling, mask, mode))


def test_a_small_gap_summed_over_long_completions_drops_them_and_the_per_token_mean_would_not():
    out = ImportanceWeightsHook().on_rollout(rollout(300, 0.01, "sequence_mask"), 0)
    # e^(0.01 x 300) = e^3 > the cap of 3: every completion masked whole
    assert out["sequence_level"] == 1.0 and out["dropped_share"] == 1.0 and out["weight_off_share"] == 1.0
    assert out["per_token_weight_off_share"] == 0.0  # e^0.01 per token
    assert out["sum_only_off_share"] == 1.0  # the sum alone moved every one
    assert out["token_gap_mean"] == pytest.approx(0.01, rel=0.05) and out["length_mean"] == 300
    shrunk = ImportanceWeightsHook().on_rollout(rollout(300, -0.005, "sequence_truncate"), 0)
    assert shrunk["weight_mean"] == pytest.approx(0.22, abs=0.02) and shrunk["weight_off_share"] == 1.0
    assert shrunk["dropped_share"] == 0.0 and shrunk["per_token_weight_off_share"] == 0.0


def test_short_completions_or_token_level_weights_stay_near_1():
    short = ImportanceWeightsHook().on_rollout(rollout(4, 0.01, "sequence_mask"), 0)
    assert short["weight_off_share"] == 0.0 and short["weight_mean"] == pytest.approx(1.04, abs=0.01)
    tokens = ImportanceWeightsHook().on_rollout(rollout(300, 0.01, "token_truncate"), 0)  # h27's treatment
    assert tokens["sequence_level"] == 0.0 and tokens["weight_off_share"] == 0.0


def test_a_large_gap_per_token_is_not_the_sums_doing():
    out = ImportanceWeightsHook().on_rollout(rollout(40, 0.5, "sequence_mask"), 0)  # a stale generator's gap (h06)
    assert out["weight_off_share"] == 1.0 and out["per_token_weight_off_share"] == 1.0
    assert out["sum_only_off_share"] == 0.0


def test_without_vllms_correction_the_hook_says_nothing():
    batch = rollout(10, 0.0, "sequence_mask")
    batch.importance_sampling_ratio = None
    assert ImportanceWeightsHook().on_rollout(batch, 0) == {}


def test_the_generator_gap_every_vllm_hook_reads_leaves_tool_outputs_and_padding_out():
    """hooks/_util.sampling_gap: what sampling_parity, lora_sync and importance_weights read as the generator's gap."""
    from hypotrack.hooks._util import sampling_gap, sampling_log_ratio

    batch = rollout(4, 0.0, "sequence_mask", rows=2)
    batch.sampling_per_token_logps = torch.zeros(2, 4)
    batch.old_per_token_logps = torch.tensor([[-0.1, -0.2, -5.0, -9.0], [0.3, -0.4, -7.0, -0.5]])
    batch.completion_mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])  # the first row padded after 3 tokens
    batch.tool_mask = torch.tensor([[1, 1, 0, 1], [1, 1, 0, 1]])  # the third token of each row a tool's output
    assert sorted(sampling_gap(batch).tolist()) == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    assert sampling_log_ratio(batch)[1, 0].item() == pytest.approx(0.3)  # the trainer's logprob less vLLM's
    batch.sampling_per_token_logps = None  # Hugging Face generation reports no logprobs of its own
    assert sampling_gap(batch) is None and sampling_log_ratio(batch) is None


def _ranked(folder, ratio: float):
    """Triage of a flat 40-step run in TRL 1.16's trainer_state.json, with vLLM generating ~300-token completions."""
    from hypotrack.triage.api import triage

    entries = [trl_entry(s, 0.3, **{"completions/mean_length": 310.0, "sampling/sampling_logp_difference/mean": 0.008,
                                    "sampling/importance_sampling_ratio/mean": ratio})
               for s in range(1, 41)]
    write_state(folder / "run", entries)
    return triage(str(folder / "run"), _hypotheses())


def test_triage_suspects_h27_where_trls_weights_fall_while_the_gap_per_token_is_small(tmp_path):
    # the shape of trl#5814's run: a flat reward, ~300-token completions, 0.008 nats per token, weights averaging 0.55
    report = _ranked(tmp_path, 0.55)
    assert report.rank_of("h27") == 1, json.dumps([(r.id, r.evidence) for r in report.ranking[:4]])
    assert "h27" in [r.id for r in report.suspects()]
    healthy = _ranked(tmp_path / "healthy", 0.99)
    assert "h27" not in [r.id for r in healthy.suspects()]
