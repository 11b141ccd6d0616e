"""h05 reward signal: each reward function's level and spread, how the functions agree, how often they
failed, and, by role, how much of the learning signal the auxiliary rewards carry.

Roles: the task reward is the experiment's `task_reward` (its first function unless it names another);
every other function is auxiliary (format, style, length...). Criteria read the role metrics, so they
mean the same whatever the user's functions are called:

- `task/mean`, `task/std`: the task reward (NaN rows, where the function gave no value, excluded).
- `aux/count`: number of auxiliary functions; `aux/std_max`: the largest auxiliary std.
- `aux/task_corr_min`: the lowest Pearson correlation of an auxiliary function with the task reward
  across the batch (emitted only when there are auxiliary functions).
- `aux/task_alignment`: the correlation, pooled over groups, between the group-centred combined reward
  (what the advantages are built from) and the group-centred task reward, over the groups where the task
  reward differs. GRPO learns from within-group differences, so this says whether the advantages point
  where the task reward does: 1 with one reward function or auxiliaries that agree with the task, lower
  when an auxiliary reward that ignores the task (noise, a flaky judge) drives the differences, negative
  when one contradicts it (a penalty with the wrong sign), 0 when the auxiliaries cancel the task's
  differences. Scale-free: it reads the same for 0/1 verifiers and for reward models with any range. 1
  when the task reward is tied in every group (nothing for an auxiliary reward to spoil: a task reward
  that stopped varying is h11's or h16's).
- `aux/untracked_share`: 1 - R^2 of the same regression: the share of the within-group differences the
  task reward does not explain.
- `aux/reward_share`: the auxiliary rewards' part of the combined reward, |w * mean| of each function
  summed; `aux/mean`: the weighted auxiliary rewards themselves. Both rising while the task reward falls
  is reward hacking (h17).

Per function f: `{func}/mean`, `{func}/std` (Bessel, like TRL), `{func}/nan_share`, `{func}/errors` (calls
that raised, from batch.reward_errors); `corr/{a}__{b}`: Pearson correlation across the batch on rows where
both are defined (0.0 when either is constant or fewer than 2 such rows); `zero_std_group_share`: share of
groups of num_generations whose weighted reward has zero std (no learning signal); `errors`: total raised
calls.

Artifact `reward_histograms.png`: histogram per function over the whole run, from a capped reservoir
sample (`reservoir_size` values per function, uniform over the run).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch


def task_alignment(rewards: list[float], task: list[float], group_size: int) -> float:
    """Correlation of the group-centred combined reward with the group-centred task reward, pooled over the
    groups where the task reward differs (only there can an auxiliary reward dilute or contradict it).

    Rows where either value is undefined (NaN) are left out; groups keep their own means.
    """
    srr = stt = srt = 0.0
    for start in range(0, len(rewards), group_size):
        pairs = [(r, t) for r, t in zip(rewards[start:start + group_size], task[start:start + group_size])
                 if r == r and t == t]
        if len(pairs) < 2:
            continue
        mean_r = sum(r for r, _ in pairs) / len(pairs)
        mean_t = sum(t for _, t in pairs) / len(pairs)
        if all(abs(t - mean_t) <= 1e-12 for _, t in pairs):
            continue  # the task reward is tied here: nothing for an auxiliary reward to spoil
        for r, t in pairs:
            srr += (r - mean_r) ** 2
            stt += (t - mean_t) ** 2
            srt += (r - mean_r) * (t - mean_t)
    if stt <= 1e-12:
        return 1.0  # the task reward is tied in every group: nothing for an auxiliary reward to spoil
    if srr <= 1e-12:
        return 0.0  # the auxiliaries cancel the task's differences
    return max(-1.0, min(1.0, srt / (srr * stt) ** 0.5))


class RewardSignalHook(DiagnosticHook):
    name = "reward_signal"
    description = (
        "h05: the task reward and the auxiliary ones by role (how much of the advantage signal the task "
        "reward does not explain), per function mean/std/errors, correlations, histograms"
    )
    metrics = (
        "{func}/mean", "{func}/std", "{func}/nan_share", "{func}/errors", "corr/{a}__{b}",
        "zero_std_group_share", "errors", "task/mean", "task/std", "aux/count", "aux/std_max",
        "aux/task_corr_min", "aux/task_alignment", "aux/untracked_share", "aux/reward_share", "aux/mean",
    )

    @dataclass(frozen=True)
    class Settings:
        reservoir_size: int = 2000
        """Rewards kept per function (a uniform sample over the run) for the end-of-run histograms."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.cap = int(self.config.reservoir_size)
        self.reservoir: dict[str, list[float]] = {}
        self.seen: dict[str, int] = {}
        self._rng = random.Random(0)
        self._skip: dict[str, list[float]] = {}  # per function: algorithm L state (w, next replacement index)

    def _add(self, name: str, values: list[float]) -> None:
        """Uniform reservoir sample over the run (Vitter's algorithm L: random draws only on replacements)."""
        import math

        res = self.reservoir.setdefault(name, [])
        n = self.seen.get(name, 0)
        cap, rng = self.cap, self._rng
        if cap <= 0:
            self.seen[name] = n + len(values)
            return
        i = 0
        while i < len(values) and len(res) < cap:
            res.append(values[i])
            i += 1
        n += i
        if i < len(values):
            st = self._skip.get(name)
            if st is None:  # reservoir just filled: draw the first replacement position
                w = math.exp(math.log(rng.random() or 1e-300) / cap)
                st = [w, n + int(math.log(rng.random() or 1e-300) / math.log(max(1.0 - w, 1e-300)))]
            w, nxt = st
            end = n + len(values) - i
            while nxt < end:  # nxt = 0-based index (over the run) of the next value that enters the reservoir
                res[rng.randrange(cap)] = values[i + nxt - n]
                w *= math.exp(math.log(rng.random() or 1e-300) / cap)
                nxt += 1 + int(math.log(rng.random() or 1e-300) / math.log(max(1.0 - w, 1e-300)))
            self._skip[name] = [w, nxt]
            n = end
        self.seen[name] = n

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        # The reward matrix is small (rows x functions) and already needed as Python floats for the reservoir:
        # one `.tolist()`, then the statistics in plain Python (float64) instead of dozens of tiny tensor ops.
        import math

        rpf = batch.rewards_per_func.detach().float().cpu()
        names = list(batch.reward_func_names)
        errors = batch.reward_errors
        out: dict[str, float] = {}
        from array import array

        # rounded to float32 like the tensor reductions these values came from before (same logged values)
        fin = lambda v: array("f", (v,))[0] if math.isfinite(v) else 0.0
        cols = rpf.t().tolist() if rpf.numel() else [[] for _ in names]
        B = rpf.size(0)
        for j, name in enumerate(names):
            vals = [v for v in cols[j] if v == v]  # v == v drops NaN
            k = len(vals)
            mean = sum(vals) / k if k else 0.0
            out[f"{name}/mean"] = fin(mean) if k else 0.0
            out[f"{name}/std"] = fin(math.sqrt(sum((v - mean) ** 2 for v in vals) / (k - 1))) if k > 1 else 0.0
            out[f"{name}/nan_share"] = fin((B - k) / B) if B else 0.0
            out[f"{name}/errors"] = float(errors.get(name, 0))
            self._add(name, vals)
        out["errors"] = float(sum(errors.values()))
        task = min(max(int(batch.task_index), 0), len(names) - 1) if names else 0
        corrs: dict[tuple[int, int], float] = {}
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                xy = [(x, y) for x, y in zip(cols[a], cols[b]) if x == x and y == y]
                corr = 0.0
                if len(xy) > 1:
                    mx = sum(x for x, _ in xy) / len(xy)
                    my = sum(y for _, y in xy) / len(xy)
                    sxx = sum((x - mx) ** 2 for x, _ in xy)
                    syy = sum((y - my) ** 2 for _, y in xy)
                    den = math.sqrt(sxx * syy)
                    if den > 1e-12:
                        corr = sum((x - mx) * (y - my) for x, y in xy) / den  # float64, as before
                        corr = corr if math.isfinite(corr) else 0.0
                out[f"corr/{names[a]}__{names[b]}"] = corr
                corrs[(a, b)] = corrs[(b, a)] = corr
        from hypotrack.grpo_math import combined_rewards

        aux = [j for j in range(len(names)) if j != task]
        if names:
            out["task/mean"], out["task/std"] = out[f"{names[task]}/mean"], out[f"{names[task]}/std"]
        out["aux/count"] = float(len(aux))
        if aux:
            out["aux/std_max"] = max(out[f"{names[j]}/std"] for j in aux)
            out["aux/task_corr_min"] = min(corrs[(j, task)] for j in aux)
            weights = batch.reward_weights.detach().cpu().float().tolist()
            sizes = [abs(weights[j] * out[f"{names[j]}/mean"]) for j in range(len(names))]
            total = sum(sizes)
            out["aux/reward_share"] = sum(sizes[j] for j in aux) / total if total > 0 else 0.0
            out["aux/mean"] = sum(weights[j] * out[f"{names[j]}/mean"] for j in aux)
        G = int(batch.num_generations)
        n = (B // G) * G if G > 0 else 0
        if n and G > 1:
            rewards = combined_rewards(rpf, batch.reward_weights.detach().cpu())[:n].tolist()  # TRL's float32 rewards
            zero = 0
            for g in range(0, n, G):
                vals = [v for v in rewards[g : g + G] if v == v]
                k = len(vals)
                if k > 1:
                    m = sum(vals) / k
                    std = math.sqrt(sum((v - m) ** 2 for v in vals) / (k - 1))
                    zero += not (std > 1e-8)  # torch.isclose(std, 0) (atol 1e-8); NaN std counts as 0 like before
                else:
                    zero += 1  # fewer than 2 defined rewards: std undefined (NaN -> 0)
            out["zero_std_group_share"] = fin(zero / (n // G))
            alignment = task_alignment(rewards, cols[task][:n] if names else [], G)
            out["aux/task_alignment"] = fin(alignment)
            out["aux/untracked_share"] = fin(1.0 - alignment * alignment)
        else:
            out["zero_std_group_share"] = 0.0
            out["aux/task_alignment"], out["aux/untracked_share"] = 1.0, 0.0
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
