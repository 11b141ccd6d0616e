"""h21 broken groups: is each group of num_generations completions one prompt's?

GRPO's advantage compares a completion with the other completions of its prompt, and TRL finds them by
position: consecutive runs of num_generations rows. A sampler that does not repeat each prompt
num_generations times in a row (an iterable dataset read by several dataloader workers, a custom
sampler or generate; trl#3213) fills a "group" with different prompts, and the advantage then compares
answers to different questions. From each rollout:

- `mixed_group_share`: groups whose rows do not all carry the same prompt.
- `spread_ratio`: the combined reward's within-group standard deviation over the batch's (about 1 when
  groups are random draws from the batch; lower when prompts differ in difficulty and groups are real).
"""
from __future__ import annotations

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch


class GroupIntegrityHook(DiagnosticHook):
    name = "group_integrity"
    description = "h21: groups of num_generations rows that hold different prompts, and within-group against batch spread"
    metrics = ("mixed_group_share", "spread_ratio")

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        from hypotrack.grpo_math import combined_rewards
        from hypotrack.hooks.reward_scale import pooled_group_std

        size = int(batch.num_generations)
        prompts = [str(p) for p in (batch.prompts or batch.prompts_text)]
        groups = len(prompts) // size if size > 1 else 0
        if not groups:
            return {}
        mixed = sum(len(set(prompts[g * size:(g + 1) * size])) > 1 for g in range(groups))
        out = {"mixed_group_share": mixed / groups}
        rewards = combined_rewards(batch.rewards_per_func.detach().cpu(), batch.reward_weights.detach().cpu()).tolist()
        finite = [v for v in rewards if v == v]
        if len(finite) > 1:
            mean = sum(finite) / len(finite)
            batch_std = (sum((v - mean) ** 2 for v in finite) / len(finite)) ** 0.5
            if batch_std > 0:
                out["spread_ratio"] = pooled_group_std(rewards, size) / batch_std
        return out
