"""A few rollouts kept for the arm's `samples.json`: prompt, completion, advantage and each reward, every N steps.

The runner logs the file as a table on the arm's MLflow run, so a user reads what the policy wrote beside what
each reward function made of it.
"""

from __future__ import annotations

import math
from typing import Any

LIMIT = 400  # rows kept in all: a long run keeps its first ones


class SampleKeeper:
    def __init__(self, every: int = 10) -> None:
        self.every = max(1, every)
        self.rows: list[dict[str, Any]] = []

    def keep(self, trainer: Any, scored: dict[str, Any], output: dict[str, Any]) -> None:
        """Two groups of this rollout, on the steps that are due."""
        step = trainer.state.global_step
        if step % self.every or len(self.rows) >= LIMIT:
            return
        rewards = scored["rewards_per_func"].cpu()
        advantages = output["advantages"].detach().cpu().tolist()
        for i in range(min(len(scored["prompts"]), trainer.num_generations * 2)):
            row = {"step": step, "prompt": str(scored["prompts"][i])[-300:], "completion": str(scored["completions"][i]),
                   "advantage": float(advantages[i]) if i < len(advantages) else float("nan")}
            for j, name in enumerate(trainer.reward_func_names):
                value = float(rewards[i, j])
                row[f"reward/{name}"] = None if math.isnan(value) else value
            self.rows.append(row)
