"""h18's cause: a run continuing from a trained adapter whose KL reference is the base model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, with_kl_term


class ReferenceWithoutAdapter(PlantedFault):
    name = "reference_without_adapter"
    imitates = "h18"
    description = ("the run continues from a trained LoRA adapter and the KL reference is the base model with the "
                   "adapter off, as TRL computed it before PR #6591 (trl#3194, trl#3031): the KL term pulls towards a "
                   "policy the run never started from (the run gets a KL term of 0.04 if it has none)")
    seams = ("config", "model", "reference")

    @dataclass(frozen=True)
    class Settings:
        kl_beta: float = 0.04
        """The KL coefficient a run without a KL term gets (the usual GRPO recipes' value)."""
        adapter_std: float = 0.05
        """The spread of the trained adapter's B weights (away from their zero init)."""

    def configure(self, arm: dict[str, Any]) -> None:
        with_kl_term(arm, self.config.kl_beta)

    def model(self, model: Any, peft_config: Any) -> tuple[Any, Any]:
        """A LoRA run continuing from a trained adapter gets a peft model with that adapter (and no peft_config, as
        a user who loaded it passes none)."""
        if peft_config is None:
            return model, peft_config
        import torch
        from peft import get_peft_model

        model = get_peft_model(model, peft_config)
        generator = torch.Generator().manual_seed(1234)
        with torch.no_grad():
            for name, param in model.named_parameters():
                if "lora_B" in name:
                    param.copy_(torch.randn(param.shape, generator=generator) * self.config.adapter_std)
        return model, None

    def attach(self, trainer: Any) -> None:
        """Drop the copy of the starting adapter TRL keeps as the reference: the reference logprobs then come from
        the base model with the adapters disabled."""
        model = trainer.accelerator.unwrap_model(trainer.model)
        if hasattr(model, "peft_config") and "ref" in model.peft_config:
            model.delete_adapter("ref")
            model.set_adapter("default")
