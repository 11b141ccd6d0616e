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
        # One pass of small tensor ops whose scalar results are stacked and read back with a single `.tolist()`
        # (the rollout tensors are tiny: per-op and per-`float()` Python overhead is the whole cost).
        import math

        import torch

        from hypotrack.hooks._util import nanstd

        G = int(batch.num_generations)
        adv = batch.advantages.detach().float().reshape(-1)
        a = adv.abs()
        N = a.numel()
        srt = a.sort().values
        # torch.quantile(a, 0.99) (linear interpolation between the two closest ranks), from the sorted values
        pos = 0.99 * (N - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, N - 1)
        vals = [srt[-1], a.mean(), srt[lo], srt[hi]]
        rewards = trl_rewards(batch.rewards_per_func.detach(), batch.reward_weights.detach())
        n = (rewards.numel() // G) * G  # whole groups only
        rewards, adv_g = rewards[:n], adv[:n]
        mode = batch.scale_rewards
        if n:
            g = rewards.view(-1, G)
            mean = torch.nanmean(g, dim=1, keepdim=True)  # == trl_advantages' repeat_interleave'd group mean
            centred = g - mean
            if G > 1:
                std = nanstd(g, dim=1)
                gstd = torch.nan_to_num(std, nan=0.0)
                grp = torch.nan_to_num(centred / (std.unsqueeze(1) + EPS), nan=0.0)
            else:
                gstd = torch.zeros(n, device=g.device)
                grp = torch.nan_to_num(centred / EPS, nan=0.0)
            bstd = nanstd(rewards) if rewards.numel() > 1 else torch.zeros((), device=g.device)
            modes = {
                "group": grp,
                "batch": torch.nan_to_num(centred / (bstd + EPS), nan=0.0),
                "none": torch.nan_to_num(centred, nan=0.0),
            }
            near = gstd < self.std_threshold
            near_adv = torch.where(near.unsqueeze(1), adv_g.view(-1, G).abs(), torch.zeros((), device=adv.device))
            vals += [gstd.min(), gstd.mean(), near.float().mean(), near_adv.max()]
            vals += [modes[m].abs().max() for m in ("group", "batch", "none")]
            if mode in modes:
                # The advantages the loss sees vs TRL's formula under the configured mode: non-zero means
                # something between scoring and the loss rescaled or reordered them (or normalize_then_sum).
                vals.append((modes[mode].reshape(-1) - adv_g).abs().max())
        res = [v if math.isfinite(v) else 0.0 for v in torch.stack(vals).tolist()]
        out = {"abs_max": res[0], "abs_mean": res[1]}
        p99 = res[2] + (res[3] - res[2]) * (pos - lo)
        out["abs_p99"] = p99 if math.isfinite(p99) else 0.0
        if n:
            out["group_std_min"], out["group_std_mean"] = res[4], res[5]
            out["near_zero_std_share"], out["near_zero_std_abs_adv_max"] = res[6], res[7]
            out["abs_max_group"], out["abs_max_batch"], out["abs_max_none"] = res[8], res[9], res[10]
            out["recompute_max_abs_diff"] = res[11] if mode in modes else 0.0
        else:
            out.update(group_std_min=0.0, group_std_mean=0.0, near_zero_std_share=0.0, near_zero_std_abs_adv_max=0.0,
                       abs_max_group=0.0, abs_max_batch=0.0, abs_max_none=0.0, recompute_max_abs_diff=0.0)
        return out
