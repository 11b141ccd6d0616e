"""h01 advantage scaling: how big the advantages are and how much of that size comes from dividing by a
tiny group std.

TRL (sum_then_normalize): reward = nansum(rewards_per_func * weights) (NaN when every function gave None),
advantage = reward - group mean, divided by (std + 1e-4) where std is the group std ("group"), the batch
std ("batch"), or not divided ("none"). A group whose rewards differ only by noise gets that noise
blown up to unit-scale advantages under "group": the classic h01 failure.

`std_threshold` (default 0.01): a group std below 1% of a unit reward range (toy and most task rewards
live in [0, 1]) means its completions are effectively tied, yet "group" scaling multiplies its
differences by >= 1/(0.01 + 1e-4) ~ 100. Scale it with your reward range.
"""
from __future__ import annotations

from typing import Any

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch

EPS = 1e-4  # TRL's epsilon in advantages / (std + 1e-4)


def trl_rewards(rewards_per_func, reward_weights):
    """TRL's scalar reward per completion: weighted nansum, NaN for rows where every function gave None."""
    import torch

    rpf = rewards_per_func.float()
    rewards = (rpf * reward_weights.to(rpf.device, rpf.dtype).unsqueeze(0)).nansum(dim=1)
    rewards[torch.isnan(rpf).all(dim=1)] = float("nan")
    return rewards


def trl_advantages(rewards, num_generations: int, scale_rewards: str):
    """TRL 1.16 `_generate_and_score_completions` (sum_then_normalize), exactly, for one mode."""
    import torch

    from hypotrack.hooks._util import nanstd

    g = rewards.view(-1, num_generations)
    mean = torch.nanmean(g, dim=1).repeat_interleave(num_generations)
    if scale_rewards in ("group", "none"):
        std = nanstd(g, dim=1).repeat_interleave(num_generations) if num_generations > 1 else torch.zeros_like(rewards)
    elif scale_rewards == "batch":
        std = nanstd(rewards).expand_as(rewards) if rewards.numel() > 1 else torch.zeros_like(rewards)
    else:
        raise ValueError(f"scale_rewards must be 'group', 'batch' or 'none', got {scale_rewards!r}")
    adv = rewards - mean
    if scale_rewards != "none":
        adv = adv / (std + EPS)
    return torch.nan_to_num(adv, nan=0.0)


class AdvantagesHook(DiagnosticHook):
    name = "advantages"

    def __init__(self, std_threshold: float = 1e-2, **settings: Any) -> None:
        super().__init__(std_threshold=std_threshold, **settings)
        self.std_threshold = float(std_threshold)

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        import torch

        from hypotrack.hooks._util import f, nanstd

        G = int(batch.num_generations)
        adv = batch.advantages.detach().float().reshape(-1)
        a = adv.abs()
        out = {
            "abs_max": f(a.max()),
            "abs_mean": f(a.mean()),
            "abs_p99": f(torch.quantile(a, 0.99)),
        }
        rewards = trl_rewards(batch.rewards_per_func.detach(), batch.reward_weights.detach())
        n = (rewards.numel() // G) * G  # whole groups only
        rewards, adv_g = rewards[:n], adv[:n]
        gstd = torch.nan_to_num(nanstd(rewards.view(-1, G), dim=1), nan=0.0) if G > 1 else torch.zeros(n // max(G, 1))
        near = gstd < self.std_threshold
        out["group_std_min"] = f(gstd.min()) if gstd.numel() else 0.0
        out["group_std_mean"] = f(gstd.mean()) if gstd.numel() else 0.0
        out["near_zero_std_share"] = f(near.float().mean()) if gstd.numel() else 0.0
        near_adv = adv_g.view(-1, G).abs()[near] if gstd.numel() else adv_g[:0]
        out["near_zero_std_abs_adv_max"] = f(near_adv.max()) if near_adv.numel() else 0.0
        for mode in ("group", "batch", "none"):
            out[f"abs_max_{mode}"] = f(trl_advantages(rewards, G, mode).abs().max()) if n else 0.0
        # The advantages the loss sees vs TRL's formula under the configured mode: non-zero means something
        # between scoring and the loss rescaled or reordered them (or normalize_then_sum is in use).
        if n and batch.scale_rewards in ("group", "batch", "none"):
            expected = trl_advantages(rewards, G, batch.scale_rewards)
            out["recompute_max_abs_diff"] = f((expected - adv_g).abs().max())
        else:
            out["recompute_max_abs_diff"] = 0.0
        return out
