"""h20 rewards summed before they are normalised: does one reward function's scale decide the advantages?

GRPO's default sums the weighted reward functions, then normalises the sum within each group. A function
on a large scale (a reward model's 0-10, a length penalty in tokens) then decides every advantage, and
different combinations of the other rewards collapse to the same advantage (GDPO: trl PR #4785, verl PR
#5503; TRL's `multi_objective_aggregation: normalize_then_sum` normalises each function first). By role,
pooled over the groups of each rollout:

- `task_spread`: the weighted task reward's within-group standard deviation.
- `aux_spread_max`: the largest weighted within-group standard deviation of an auxiliary function.
- `aux_task_spread_ratio`: their ratio, on rollouts where the task reward varies in some group; with
  normalize_then_sum each function enters the advantages at unit spread, so the ratio is that of the
  weights' magnitudes.
- `aux_task_scale_ratio`: the same ratio without the weights, for that auxiliary function: above the
  weighted ratio's threshold, the function's own scale makes it dominate; near 1, its weight does (a
  choice the user made, which normalising first does not undo).
- `normalised_first`: 1 when the run normalises each function before summing, else 0.
"""
from __future__ import annotations

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch


def pooled_group_std(values: list[float], size: int) -> float:
    """The square root of the mean within-group variance (population), NaN rows left out."""
    total, count = 0.0, 0
    for start in range(0, len(values) - size + 1, size):
        group = [v for v in values[start:start + size] if v == v]
        if len(group) > 1:
            mean = sum(group) / len(group)
            total += sum((v - mean) ** 2 for v in group) / len(group)
            count += 1
    return (total / count) ** 0.5 if count else 0.0


class RewardScaleHook(DiagnosticHook):
    name = "reward_scale"
    description = "h20: each reward function's weighted within-group spread, auxiliary against task, and the aggregation"
    metrics = ("task_spread", "aux_spread_max", "aux_task_spread_ratio", "aux_task_scale_ratio", "normalised_first")

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        rewards = batch.rewards_per_func.detach().cpu().float()
        weights = batch.reward_weights.detach().cpu().float().tolist()
        size = max(int(batch.num_generations), 1)
        normalised = batch.aggregation == "normalize_then_sum"
        out = {"normalised_first": float(normalised)}
        spreads = [pooled_group_std([v * w for v in rewards[:, j].tolist()], size) for j, w in enumerate(weights)]
        task = spreads[batch.task_index]
        out["task_spread"] = task
        aux = [(j, s) for j, s in enumerate(spreads) if j != batch.task_index]
        if not aux:
            return out
        j, spread = max(aux, key=lambda item: item[1])
        out["aux_spread_max"] = spread
        raw_task = pooled_group_std(rewards[:, batch.task_index].tolist(), size)
        if raw_task > 0:
            out["aux_task_scale_ratio"] = pooled_group_std(rewards[:, j].tolist(), size) / raw_task
        if task > 0:
            if normalised:
                out["aux_task_spread_ratio"] = (abs(weights[j]) / abs(weights[batch.task_index])
                                                if spread > 0 and weights[batch.task_index] else 0.0)
            else:
                out["aux_task_spread_ratio"] = spread / task
        return out
