"""h16's cause: a learning rate far above the calibrated one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault


class LearningRateTooHigh(PlantedFault):
    name = "learning_rate_too_high"
    imitates = "h16"
    description = ("the learning rate is 20 times the calibrated one: training wrecks a model that was already partly "
                   "right (hello-agents#770)")
    seams = ("config",)
    signature_steps = 10  # the held-out drop needs updates to accumulate

    @dataclass(frozen=True)
    class Settings:
        factor: float = 20.0
        """The run's learning rate times this (TRL's default 1e-6 where the run sets none)."""

    def configure(self, arm: dict[str, Any]) -> None:
        arm["grpo"]["learning_rate"] = arm["grpo"].get("learning_rate", 1e-6) * self.config.factor
