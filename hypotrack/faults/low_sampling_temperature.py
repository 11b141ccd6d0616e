"""h15's cause: an inference temperature copied into the training config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, set_config


class LowSamplingTemperature(PlantedFault):
    name = "low_sampling_temperature"
    imitates = "h15"
    description = ("training samples and scores at temperature 0.3 (an inference setting copied into GRPOConfig): a "
                   "group's completions come out identical and exploration stops (verl#5953, trl#3320)")
    seams = ("config",)
    signature_steps = 12  # identical completions spread as the sharpened policy repeats itself

    @dataclass(frozen=True)
    class Settings:
        temperature: float = 0.3
        """GRPOConfig's temperature (sampling and scoring)."""

    def configure(self, arm: dict[str, Any]) -> None:
        set_config(arm, {"grpo.temperature": self.config.temperature})
