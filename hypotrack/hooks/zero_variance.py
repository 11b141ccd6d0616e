"""h11 zero-variance groups: prompts whose completions all get the same reward teach nothing.

GRPO's advantage is the reward minus its group's mean: a group whose completions all get the same
reward contributes zero advantage, zero loss and zero gradient (trl#3857, unsloth#3485). Part of
that is healthy (a confident model writes the same answer four times); the failure is completions
that differ yet are scored alike, because the prompt is beyond the model or too easy, or the reward
cannot tell the completions apart.

- `tied_share`: groups whose combined reward has zero spread (TRL's frac_reward_zero_std).
- `tied_distinct_share`: groups whose completions differ (as text) yet all got the same reward,
  over all groups: the signal the batch wastes.
- `zero_advantage_share`: completions whose advantage is zero (|A| < 1e-6).
- `reward_constant`: 1 when every completion of the batch got the same combined reward (a dead reward,
  or a model that never succeeds), else 0.
"""
from __future__ import annotations

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch

TIE = 1e-8  # TRL counts a group as zero-std by torch.isclose(std, 0), i.e. within 1e-8


class ZeroVarianceHook(DiagnosticHook):
    name = "zero_variance"
    description = "h11: groups whose completions all get the same reward though they differ, zero advantages"
    metrics = (
        "tied_share", "tied_distinct_share", "zero_advantage_share", "reward_constant",
    )

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        from hypotrack.grpo_math import combined_rewards

        G = int(batch.num_generations)
        rewards = combined_rewards(batch.rewards_per_func.detach().cpu(), batch.reward_weights.detach().cpu()).tolist()
        n = (len(rewards) // G) * G if G > 1 else 0
        groups = n // G if n else 0
        tied = tied_distinct = 0
        for start in range(0, n, G):
            values = [v for v in rewards[start:start + G] if v == v]
            spread = max(values) - min(values) if values else 0.0
            if spread <= TIE:
                tied += 1
                tied_distinct += len(set(batch.completions_text[start:start + G])) > 1
        finite = [v for v in rewards if v == v]
        advantages = batch.advantages.detach().float().reshape(-1).abs().tolist()
        return {
            "tied_share": tied / groups if groups else 0.0,
            "tied_distinct_share": tied_distinct / groups if groups else 0.0,
            "zero_advantage_share": sum(a < 1e-6 for a in advantages) / len(advantages) if advantages else 0.0,
            "reward_constant": 1.0 if finite and max(finite) - min(finite) <= TIE else 0.0,
        }
