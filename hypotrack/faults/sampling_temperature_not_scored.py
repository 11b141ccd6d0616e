"""h14's cause: generation samples at a temperature the loss does not score at."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, set_config


class SamplingTemperatureNotScored(PlantedFault):
    name = "sampling_temperature_not_scored"
    imitates = "h14"
    description = ("generation_kwargs samples at temperature 0.7 while the loss scores the tokens at the configured "
                   "1.0 (trl#4159, trl PR #3029)")
    seams = ("config",)

    @dataclass(frozen=True)
    class Settings:
        temperature: float = 0.7
        """The temperature generation_kwargs samples at (the loss keeps GRPOConfig's)."""

    def configure(self, arm: dict[str, Any]) -> None:
        set_config(arm, {"grpo.generation_kwargs": {"temperature": self.config.temperature}})
