"""h04's cause: a prompt budget that cuts the paragraph holding the answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, set_config


class TruncateAnswer(PlantedFault):
    name = "truncate_answer"
    imitates = "h04"
    description = "prompts are cut to a budget that drops the paragraph holding the answer"
    seams = ("config",)

    @dataclass(frozen=True)
    class Settings:
        max_prompt_length: int = 96
        """The prompt budget in tokens (the toy's multi-hop prompts are longer)."""
        truncation_side: str = "left"
        """Which end of the prompt is cut (the answer's paragraph comes first)."""

    def configure(self, arm: dict[str, Any]) -> None:
        set_config(arm, {"data.max_prompt_length": self.config.max_prompt_length,
                         "data.truncation_side": self.config.truncation_side})
