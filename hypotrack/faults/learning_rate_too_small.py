"""h26's cause: a learning rate so small that the updates do not move the policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault


class LearningRateTooSmall(PlantedFault):
    name = "learning_rate_too_small"
    imitates = "h26"
    description = ("the learning rate is three thousandths of the calibrated one (a full-fine-tuning rate kept for LoRA "
                   "adapters: X-R1#66 at 1e-6; DanceGRPO#45, where 1e-6 'always leads to training failure'): the "
                   "rewards vary within groups, the gradients are healthy, and the policy hardly moves")
    seams = ("config",)

    @dataclass(frozen=True)
    class Settings:
        factor: float = 0.003
        """The run's learning rate times this (TRL's default 1e-6 where the run sets none)."""

    def configure(self, arm: dict[str, Any]) -> None:
        arm["grpo"]["learning_rate"] = arm["grpo"].get("learning_rate", 1e-6) * self.config.factor
