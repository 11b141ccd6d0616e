"""h22's cause: a learning-rate schedule stepped on every micro-batch of gradient accumulation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, set_config
from hypotrack.session.trl_seams import Seam, wrap


class ScheduleSteppedPerMicroBatch(PlantedFault):
    name = "schedule_stepped_per_micro_batch"
    imitates = "h22"
    description = ("the learning-rate schedule advances on every micro-batch while the optimizer steps once per four "
                   "(gradient accumulation; starVLA PR #210, accelerate#963): a linear decay set for the whole run "
                   "reaches 0 a quarter of the way in")
    seams = ("config", "training_step")
    signature_steps = 16  # the same course as schedule_counts_batches, from a schedule stepped four times per update

    @dataclass(frozen=True)
    class Settings:
        gradient_accumulation_steps: int = 4
        """Micro-batches per optimizer update (the user's schedule is set for the whole run)."""

    def configure(self, arm: dict[str, Any]) -> None:
        set_config(arm, {"grpo.lr_scheduler_type": "linear", "grpo.warmup_steps": 0,
                         "grpo.gradient_accumulation_steps": self.config.gradient_accumulation_steps})

    def attach(self, trainer: Any) -> None:
        """Advance the schedule after every micro-batch's backward pass, as a loop that calls scheduler.step()
        inside its accumulation loop does; the trainer's own step after each update is the last micro-batch's, so
        the schedule moves gradient_accumulation_steps times per optimizer step."""
        accumulation = int(trainer.args.gradient_accumulation_steps)
        micro_batches = 0

        def make(original: Any) -> Any:
            def training_step(*args: Any, **kwargs: Any) -> Any:
                nonlocal micro_batches
                loss = original(*args, **kwargs)
                micro_batches += 1
                if micro_batches % accumulation and trainer.lr_scheduler is not None:
                    trainer.lr_scheduler.step()
                return loss

            return training_step

        wrap(trainer, Seam.TRAINING_STEP, make)
