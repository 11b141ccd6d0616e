"""h06's cause: generation runs without the trained adapters."""

from __future__ import annotations

from typing import Any

from hypotrack.faults.base import PlantedFault
from hypotrack.session.trl_seams import Seam, wrap


class LoraNotSynced(PlantedFault):
    name = "lora_not_synced"
    imitates = "h06"
    description = ("generation runs with the LoRA adapters disabled, so rollouts never come from the trained policy")
    seams = ("generate",)

    def attach(self, trainer: Any) -> None:
        """Generation samples from the base weights: the trained adapters never reach it (full fine-tuning has
        nothing to desynchronise)."""
        def make(original: Any) -> Any:
            def generate(*args: Any, **kwargs: Any) -> Any:
                model = trainer.accelerator.unwrap_model(trainer.model)
                if not hasattr(model, "disable_adapter"):
                    return original(*args, **kwargs)
                with model.disable_adapter():
                    return original(*args, **kwargs)

            return generate

        wrap(trainer, Seam.GENERATE, make)
