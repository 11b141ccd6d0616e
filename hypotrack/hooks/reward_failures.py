"""h24 failures scored as a real reward: does the task reward give the same completion the same score?

A verifier or environment that times out or crashes often returns a default (0) that trains as if the
answer were wrong (rllm PR #710: 76 of 178 episodes timed out and were scored; trl PR #6427). A
deterministic reward scores a completion the same every time; a failure default does not, and its changes
all land on the default value. Every `every` rollouts, the task reward function (by role) scores up to
`rows` completions of the batch twice more, the way TRL calls it (the two calls are compared with each
other, not with the training scores, which a trainer may have changed after the function returned):

- `task/rescored_changed_share`: the share of completions whose two scores differ.
- `task/changes_at_default_share`: of the changed ones, the largest share that have one same value as one
  of their two scores: 1 for a failure default, whatever it is (0 for a failure under a +-1 verdict, the
  floor of a 0/1 one), lower for a judge that samples its scores across its range.
- `task/default_value`: that value (the default a failure returns).
- `task/floor_share`: the share of the batch at its lowest task reward.
Calls that raise are counted per function by hypotrack's reward wrapper (`reward_errors/<name>`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch


class RewardFailuresHook(DiagnosticHook):
    name = "reward_failures"
    description = "h24: the task reward of the same completions scored again, and the one value its changes share"
    metrics = ("task/rescored_changed_share", "task/changes_at_default_share", "task/default_value",
               "task/floor_share")

    @dataclass(frozen=True)
    class Settings:
        every: int = 2
        """Score again every this many rollouts (the first one included)."""
        rows: int = 32
        """Completions scored again per check."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._n_rollouts = 0

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        due = self._n_rollouts % max(int(self.config.every), 1) == 0
        self._n_rollouts += 1
        if not due or not batch.reward_funcs:
            return {}
        scores = batch.rewards_per_func.detach().cpu().float()[:, batch.task_index].tolist()
        finite = [s for s in scores if s == s]
        if not finite:
            return {}
        floor = min(finite)
        out = {"task/floor_share": sum(s == floor for s in finite) / len(finite)}
        count = len(scores)
        stride = max(1, count // max(int(self.config.rows), 1))
        rows = [i for i in range(0, count, stride) if scores[i] == scores[i]][: int(self.config.rows)]
        func = batch.reward_funcs[batch.task_index]
        first, second = _score_again(func, batch, rows), _score_again(func, batch, rows)
        pairs = [(a, b) for a, b in zip(first, second) if a is not None and b is not None]
        if not pairs:
            return out
        changed = [(a, b) for a, b in pairs if abs(a - b) > 1e-9]
        out["task/rescored_changed_share"] = len(changed) / len(pairs)
        if changed:
            default, share = shared_value(changed)
            out["task/changes_at_default_share"], out["task/default_value"] = share, default
        return out


def shared_value(changed: list[tuple[float, float]]) -> tuple[float, float]:
    """The value most of these changed (first, second) scores have on one side, and the share of them that do
    (the lower value where two are as common): a failure default is on one side of every change."""
    counts = Counter(value for pair in changed for value in set(pair))
    default = min(counts, key=lambda value: (-counts[value], value))
    return default, counts[default] / len(changed)


def _score_again(func, batch: RolloutBatch, rows: list[int]) -> list[float | None]:
    """The reward function on these rows' own completions and token ids."""
    from hypotrack.hooks.reward_check import score_rows

    mask = batch.completion_mask.detach().cpu().bool()
    ids = [batch.completion_ids[i].detach().cpu()[mask[i]].tolist() for i in rows]
    return score_rows(func, batch, rows, [batch.completions_text[i] for i in rows], ids)
