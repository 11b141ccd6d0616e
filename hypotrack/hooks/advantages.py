"""h01 advantage scaling: how big the advantages are and how much of that size comes from dividing by a
tiny group std.

TRL (sum_then_normalize): reward = nansum(rewards_per_func * weights) (NaN when every function gave None),
advantage = reward - group mean, divided by (std + 1e-4) where std is the group std ("group"), the batch
std ("batch"), or not divided ("none"). A group whose rewards differ only by noise gets that noise
blown up to unit-scale advantages under "group": the classic h01 failure.

TRL's other aggregation, `multi_objective_aggregation: normalize_then_sum`, standardises each reward
function within its group first (by its own std + 1e-4), sums the weighted z-scores and divides by the
batch std (scale_rewards is not used). There the tiny-std failure lives per (group, function) pair:
`group_std_*` and `near_zero_std_share` are over those pairs, and `near_zero_std_abs_adv_max` is the
largest advantage contribution of a near-tied pair, |w * z| / (batch std + 1e-4). The `abs_max_<mode>`
keys always describe sum_then_normalize under each scale_rewards mode, for comparison.

`near_tie` (default 0.01): a group is near-tied when its reward std is below 1% of the reward range seen
so far in the run (the largest minus the smallest reward, per function under normalize_then_sum): its
completions are effectively tied, yet "group" scaling multiplies their differences by ~100 or more. Being
relative to the observed range, it means the same for 0/1 verifiers and for reward models of any scale.

`noise_tie` (default 0.001): `noise_tie_abs_adv_max` is the largest advantage of a group whose std is below
0.1% of that range: a difference no grader means (a tie-breaker, bf16 jitter). A reward that varies
continuously (a reward model's score) leaves a group under 1% now and then by chance, when most of its
completions are identical and the odd one scores close to them; under 0.1% that chance is ten times
smaller, while a tie-breaker's 1e-4 of the range stays below it every time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch


class AdvantagesHook(DiagnosticHook):
    name = "advantages"
    description = (
        "h01: advantage magnitudes, per-group reward std, near-zero-std groups, abs max under each "
        "scale_rewards mode"
    )
    metrics = (
        "abs_max", "abs_mean", "abs_p99", "group_std_min", "group_std_mean", "near_zero_std_share",
        "near_zero_std_abs_adv_max", "noise_tie_abs_adv_max", "abs_max_group", "abs_max_batch", "abs_max_none",
        "recompute_max_abs_diff",
    )

    @dataclass(frozen=True)
    class Settings:
        near_tie: float = 1e-2
        """Rewards this close count as tied when a group's std is judged near zero."""
        noise_tie: float = 1e-3
        """A group std below this share of the reward range is a difference no grader means (a tie-breaker)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.near_tie = float(self.config.near_tie)
        self.noise_tie = float(self.config.noise_tie)
        self._low = self._high = None  # running min/max of the rewards (per function under normalize_then_sum)

    def _range(self, rewards):  # (N,) or (N, F) tensor
        """The reward range seen so far in the run, updated with this batch (per column for a matrix)."""
        import torch

        finite = torch.nan_to_num(rewards, nan=float("inf"))
        low = finite.min(dim=0).values
        finite = torch.nan_to_num(rewards, nan=float("-inf"))
        high = finite.max(dim=0).values
        if self._low is None or self._low.shape != low.shape:
            self._low, self._high = low, high
        else:
            self._low, self._high = torch.minimum(self._low, low), torch.maximum(self._high, high)
        return torch.nan_to_num(self._high - self._low, nan=0.0, posinf=0.0, neginf=0.0).clamp(min=0.0)

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        # One pass of small tensor ops whose scalar results are stacked and read back with a single `.tolist()`
        # (the rollout tensors are tiny: per-op and per-`float()` Python overhead is the whole cost).
        import math

        import torch

        from hypotrack.grpo_math import ADV_EPS as EPS
        from hypotrack.grpo_math import advantages_by_mode, combined_rewards, normalize_then_sum

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
        rewards = combined_rewards(batch.rewards_per_func.detach(), batch.reward_weights.detach())
        n = (rewards.numel() // G) * G  # whole groups only
        rewards, adv_g = rewards[:n], adv[:n]
        mode = batch.scale_rewards
        if n:
            modes, std, _ = advantages_by_mode(rewards, G)
            gstd = torch.nan_to_num(std, nan=0.0)
            if batch.aggregation == "normalize_then_sum":
                # The tiny-std blow-up happens per (group, function) pair: a near-tied pair's largest
                # contribution to an advantage is |w * z| / (batch std + eps).
                parts = normalize_then_sum(batch.rewards_per_func.detach()[:n], batch.reward_weights.detach(), G)
                std_k, terms, bstd_nts, expected = parts.function_std, parts.terms, parts.batch_std, parts.advantages
                spread = torch.nan_to_num(std_k, nan=0.0)  # per (group, function) pair
                span = self._range(batch.rewards_per_func.detach()[:n].float()).unsqueeze(0)
                size = torch.nan_to_num(terms.abs(), nan=0.0) / (bstd_nts + EPS)  # (groups, G, functions)
            else:
                spread, span, size = gstd, self._range(rewards), adv_g.view(-1, G).abs()  # size: (groups, G)
                expected = modes[mode].reshape(-1) if mode in modes else None

            def largest(tie: float):  # the largest advantage (part) of a group tied up to `tie`
                return torch.where((spread < tie * span).unsqueeze(1), size, size.new_zeros(())).amax()

            near = spread < self.near_tie * span
            vals += [spread.min(), spread.mean(), near.float().mean(), largest(self.near_tie), largest(self.noise_tie)]
            vals += [modes[m].abs().max() for m in ("group", "batch", "none")]
            if expected is not None:
                # The advantages the loss sees vs TRL's formula for the configured aggregation and mode:
                # non-zero means something between scoring and the loss rescaled or reordered them.
                vals.append((expected - adv_g).abs().max())
        res = [v if math.isfinite(v) else 0.0 for v in torch.stack(vals).tolist()]
        out = {"abs_max": res[0], "abs_mean": res[1]}
        p99 = res[2] + (res[3] - res[2]) * (pos - lo)
        out["abs_p99"] = p99 if math.isfinite(p99) else 0.0
        if n:
            out["group_std_min"], out["group_std_mean"] = res[4], res[5]
            out["near_zero_std_share"], out["near_zero_std_abs_adv_max"] = res[6], res[7]
            out["noise_tie_abs_adv_max"] = res[8]
            out["abs_max_group"], out["abs_max_batch"], out["abs_max_none"] = res[9], res[10], res[11]
            out["recompute_max_abs_diff"] = res[12] if len(res) > 12 else 0.0
        else:
            out.update(group_std_min=0.0, group_std_mean=0.0, near_zero_std_share=0.0, near_zero_std_abs_adv_max=0.0,
                       noise_tie_abs_adv_max=0.0, abs_max_group=0.0, abs_max_batch=0.0, abs_max_none=0.0,
                       recompute_max_abs_diff=0.0)
        return out
