"""h20's cause: an auxiliary reward model on a 0-10 scale summed with a 0/1 task reward."""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, auxiliary_index, weigh_auxiliaries


class UnnormalisedRewardScales(PlantedFault):
    name = "unnormalised_reward_scales"
    imitates = "h20"
    description = ("an auxiliary reward model scores on a 0-10 scale and is summed with the 0/1 task reward before the "
                   "group normalisation (trl PR #4785, verl PR #5503): its spread decides the advantages")
    seams = ("config", "rewards")

    @dataclass(frozen=True)
    class Settings:
        auxiliary_weight: float = 1.0
        """The auxiliary reward model's weight, times the task reward's."""
        top_score: int = 10
        """The auxiliary reward model's top score (its scale runs from 0)."""

    def configure(self, arm: dict[str, Any]) -> None:
        weigh_auxiliaries(arm, self.config.auxiliary_weight)

    def rewards(self, trainer: Any, rewards_per_func: Any, inputs: list[dict[str, Any]], completions: list[Any],
                task_index: int) -> Any:
        import torch

        from hypotrack.toy.text import completion_text

        if rewards_per_func.shape[1] < 2:
            return rewards_per_func
        rewards_per_func = rewards_per_func.clone()
        scores = [self.style_score(completion_text(c)) for c in completions]
        rewards_per_func[:, auxiliary_index(task_index)] = torch.tensor(
            scores, dtype=rewards_per_func.dtype).to(rewards_per_func.device)
        return rewards_per_func

    def style_score(self, text: str) -> float:
        """A 0-10 score that is a fixed function of the text and ignores correctness (a style model trained for
        another purpose), so completions of one prompt get scores that differ by points."""
        return float(zlib.crc32(text.encode()) % (int(self.config.top_score) + 1))
