"""h25's cause: an optimizer built from the model's parameters before the LoRA adapters existed."""

from __future__ import annotations

from typing import Any

from hypotrack.faults.base import PlantedFault
from hypotrack.session.trl_seams import Seam, wrap


class OptimizerBuiltBeforeAdapters(PlantedFault):
    name = "optimizer_built_before_adapters"
    imitates = "h25"
    description = ("the script builds its AdamW from model.parameters() and passes it with a peft_config: the LoRA "
                   "adapters are added afterwards, so the optimizer holds none of them; gradients reach the adapters "
                   "and nothing trains (adapter-hub/adapters#260, gke-labs/open-rl PR #80, trl#6700)")
    seams = ("optimizer",)

    def attach(self, trainer: Any) -> None:
        """The optimizer TRL trains with is the user's, over the weights `model.parameters()` gave before the
        adapters were added (the base model's, which PEFT then froze). With full fine-tuning those are the weights
        that train: nothing goes wrong there."""
        def make(original: Any) -> Any:
            def create_optimizer(*args: Any, **kwargs: Any) -> Any:
                if trainer.optimizer is None:
                    import torch

                    model = trainer.accelerator.unwrap_model(trainer.model)
                    built_before = [p for name, p in model.named_parameters() if "lora_" not in name]
                    trainer.optimizer = torch.optim.AdamW(built_before, lr=trainer.args.learning_rate)
                return original(*args, **kwargs)

            return create_optimizer

        wrap(trainer, Seam.OPTIMIZER, make)
