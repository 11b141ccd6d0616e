"""h05 reward signal: each reward function's level and spread, how the functions agree, and how often
they failed.

Per function f (NaN = the function gave no value for that row, excluded): `{func}/mean`, `{func}/std`
(Bessel, like TRL), `{func}/nan_share`, `{func}/errors` (calls that raised, from batch.reward_errors);
`corr/{a}__{b}`: Pearson correlation across the batch on rows where both are defined (0.0 when either is
constant or fewer than 2 such rows: undefined, reported as "no linear relation" to stay NaN-free);
`zero_std_group_share`: share of groups of num_generations whose weighted reward has zero std (no
learning signal); `errors`: total raised calls.

Artifact `reward_histograms.png`: histogram per function over the whole run, from a capped reservoir
sample (`reservoir_size` values per function, uniform over the run).
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch


class RewardSignalHook(DiagnosticHook):
    name = "reward_signal"

    def __init__(self, reservoir_size: int = 2000, **settings: Any) -> None:
        super().__init__(reservoir_size=reservoir_size, **settings)
        self.cap = int(reservoir_size)
        self.reservoir: dict[str, list[float]] = {}
        self.seen: dict[str, int] = {}
        self._rng = random.Random(0)

    def _add(self, name: str, values: list[float]) -> None:
        res = self.reservoir.setdefault(name, [])
        for v in values:
            n = self.seen.get(name, 0)
            if len(res) < self.cap:
                res.append(v)
            else:
                j = self._rng.randrange(n + 1)
                if j < self.cap:
                    res[j] = v
            self.seen[name] = n + 1

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        import torch

        from hypotrack.hooks._util import f, nanstd

        rpf = batch.rewards_per_func.detach().float().cpu()
        names = list(batch.reward_func_names)
        out: dict[str, float] = {}
        for j, name in enumerate(names):
            col = rpf[:, j]
            ok = ~torch.isnan(col)
            out[f"{name}/mean"] = f(torch.nanmean(col)) if ok.any() else 0.0
            out[f"{name}/std"] = f(nanstd(col)) if ok.sum() > 1 else 0.0
            out[f"{name}/nan_share"] = f((~ok).float().mean())
            out[f"{name}/errors"] = float(batch.reward_errors.get(name, 0))
            self._add(name, col[ok].tolist())
        out["errors"] = float(sum(batch.reward_errors.values()))
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                x, y = rpf[:, a], rpf[:, b]
                ok = ~(torch.isnan(x) | torch.isnan(y))
                x, y = x[ok].double(), y[ok].double()
                corr = 0.0
                if x.numel() > 1:
                    xc, yc = x - x.mean(), y - y.mean()
                    den = torch.sqrt((xc * xc).sum() * (yc * yc).sum())
                    if den > 1e-12:
                        corr = f((xc * yc).sum() / den)
                out[f"corr/{names[a]}__{names[b]}"] = corr
        from hypotrack.hooks.advantages import trl_rewards

        G = int(batch.num_generations)
        rewards = trl_rewards(rpf, batch.reward_weights.detach().cpu())
        n = (rewards.numel() // G) * G
        if n and G > 1:
            std = nanstd(rewards[:n].view(-1, G), dim=1)
            zero = torch.isclose(torch.nan_to_num(std, nan=0.0), torch.zeros_like(std))
            out["zero_std_group_share"] = f(zero.float().mean())
        else:
            out["zero_std_group_share"] = 0.0
        return out

    def write_artifacts(self, out_dir: Path) -> list[Path]:
        if not self.reservoir:
            return []
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        names = list(self.reservoir)
        fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3), squeeze=False)
        for ax, name in zip(axes[0], names):
            vals = self.reservoir[name]
            ax.hist(vals, bins=30, color="#4c72b0")
            ax.set_title(f"{name} (n={self.seen.get(name, 0)}, {len(vals)} shown)", fontsize=9)
            ax.set_xlabel("reward")
        axes[0][0].set_ylabel("count")
        fig.tight_layout()
        path = out_dir / "reward_histograms.png"
        fig.savefig(path, dpi=80)
        plt.close(fig)
        return [path]
