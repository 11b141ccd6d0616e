"""h12's cause: a completion budget that cuts every answer before it ends."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, set_config


class CompletionBudgetTooShort(PlantedFault):
    name = "completion_budget_too_short"
    imitates = "h12"
    description = ("max_completion_length is one token: answers are cut before they finish and score 0 (trl#5697, "
                   "trl#6263)")
    seams = ("config",)

    @dataclass(frozen=True)
    class Settings:
        max_completion_length: int = 1
        """The completion budget in tokens."""

    def configure(self, arm: dict[str, Any]) -> None:
        set_config(arm, {"grpo.max_completion_length": self.config.max_completion_length})
