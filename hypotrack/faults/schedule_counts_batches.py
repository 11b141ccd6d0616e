"""h22's cause: a learning-rate schedule whose horizon counts batches instead of optimizer steps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, set_config
from hypotrack.session.trl_seams import Seam, wrap


class ScheduleCountsBatches(PlantedFault):
    name = "schedule_counts_batches"
    imitates = "h22"
    description = ("the learning-rate schedule is built for a quarter of the run's optimizer steps (its horizon counted "
                   "in batches where the optimizer steps once per four, SkyRL PR #873): a linear decay reaches 0 a "
                   "quarter of the way in")
    seams = ("config", "scheduler")
    signature_steps = 16  # the rate reaches 0 a quarter of the way in; a quarter must remain after it

    @dataclass(frozen=True)
    class Settings:
        horizon_share: float = 0.25
        """The schedule's horizon, as a share of the optimizer steps the run takes."""

    def configure(self, arm: dict[str, Any]) -> None:
        set_config(arm, {"grpo.lr_scheduler_type": "linear", "grpo.warmup_steps": 0})

    def attach(self, trainer: Any) -> None:
        share = self.config.horizon_share

        def make(original: Any) -> Any:
            def create_scheduler(num_training_steps: int, optimizer: Any = None) -> Any:
                return original(max(1, int(num_training_steps * share)), optimizer)

            return create_scheduler

        wrap(trainer, Seam.SCHEDULER, make)
