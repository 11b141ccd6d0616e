"""h05's cause: an auxiliary reward that answers at random and weighs as much as the task reward."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, auxiliary_index, weigh_auxiliaries


class NoisyRewardComponent(PlantedFault):
    name = "noisy_reward_component"
    imitates = "h05"
    description = ("an auxiliary reward component answers at random (a flaky judge: 0 or 1 by coin flip) and weighs "
                   "as much as the task reward")
    seams = ("config", "rewards")
    signature_steps = 8  # h05 tells a noisy auxiliary reward from a climbing one by its trend

    @dataclass(frozen=True)
    class Settings:
        auxiliary_weight: float = 1.0
        """The auxiliary reward's weight, times the task reward's."""

    def configure(self, arm: dict[str, Any]) -> None:
        weigh_auxiliaries(arm, self.config.auxiliary_weight)

    def rewards(self, trainer: Any, rewards_per_func: Any, inputs: list[dict[str, Any]], completions: list[Any],
                task_index: int) -> Any:
        import torch

        if rewards_per_func.shape[1] < 2:
            return rewards_per_func
        generator = torch.Generator().manual_seed(trainer.state.global_step * 7919 + trainer.args.seed)
        rewards_per_func = rewards_per_func.clone()
        # coin flips: a judge that answers at random, on the task reward's 0/1 scale and with its spread
        noise = (torch.rand(rewards_per_func.shape[0], generator=generator) < 0.5).float()
        rewards_per_func[:, auxiliary_index(task_index)] = noise.to(rewards_per_func.device)
        return rewards_per_func
