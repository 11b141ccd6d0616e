"""h23's cause: a loss that divides each completion's token sum by its own length."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, set_config


class LengthNormalisedLoss(PlantedFault):
    name = "length_normalised_loss"
    imitates = "h23"
    description = ("the loss divides each completion's token sum by its own length (loss_type grpo, trl PR #3138) on "
                   "a run whose completions can grow: a long wrong answer is penalised less per token, so wrong "
                   "answers get longer")
    seams = ("config",)
    signature_steps = 40  # a length drift needs many updates (the default self-test leaves it out)
    not_shown_on_toy = ("a group's advantages sum to 0, so dividing by length moves a completion's length only where the "
                        "model can tell, as it writes, that it is going wrong; the toy model cannot (a warm start that "
                        "adds a 15-50 character tail after its own wrong answers left tails after right ones nearly as "
                        "long), and under loss_type grpo its wrong answers got shorter over 60 steps (trend -4.0 "
                        "standard errors; dapo +3.0); a hedge mode that is always wrong fell from 30% to under 10% of "
                        "completions within 12 steps under both losses")

    @dataclass(frozen=True)
    class Settings:
        max_completion_length: int = 16
        """The completion budget, room for completions to grow."""

    def configure(self, arm: dict[str, Any]) -> None:
        set_config(arm, {"grpo.loss_type": "grpo", "grpo.max_completion_length": self.config.max_completion_length})
