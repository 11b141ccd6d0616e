"""h18's cause with full fine-tuning: a model warmed up in memory whose KL reference is the checkpoint on disk."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault, with_kl_term


class WarmedUpInMemory(PlantedFault):
    name = "warmed_up_in_memory"
    imitates = "h18"
    description = ("the script trains the model in memory before GRPO (a short warm-up) and trains it in full, with a "
                   "KL term: TRL builds the full-fine-tuning reference from the model's path (trl 1.16's "
                   "create_model_from_path; the code quoted in trl#2684 did so only under DeepSpeed ZeRO-3), so the "
                   "reference is the checkpoint before the warm-up, a policy the run never started from (the run gets full "
                   "fine-tuning at a tenth of its learning rate, and a KL term of 0.04 if it has none)")
    seams = ("config", "model")

    @dataclass(frozen=True)
    class Settings:
        kl_beta: float = 0.04
        """The KL coefficient a run without a KL term gets (the usual GRPO recipes' value)."""
        learning_rate_factor: float = 0.1
        """Full fine-tuning moves every weight: the run's (LoRA) learning rate times this, the usual ratio."""
        warmup_steps: int = 4
        """Optimizer steps of the warm-up (next-token loss on random text) before the trainer is built."""
        warmup_learning_rate: float = 1e-3
        """The warm-up's AdamW learning rate."""

    def configure(self, arm: dict[str, Any]) -> None:
        with_kl_term(arm, self.config.kl_beta)
        if arm["lora"].get("enabled", True):
            arm["lora"]["enabled"] = False
            arm["grpo"]["learning_rate"] = arm["grpo"].get("learning_rate", 1e-6) * self.config.learning_rate_factor

    def model(self, model: Any, peft_config: Any) -> tuple[Any, Any]:
        """The warm-up: a few AdamW steps of next-token loss, in memory, on the model the trainer is then built with
        (a user's short SFT before GRPO). Nothing is saved, so the path TRL loads the reference from still holds the
        weights before it."""
        if peft_config is not None or not hasattr(model, "config"):
            return model, peft_config  # with LoRA the reference is the adapter's base: reference_without_adapter's
        import torch

        generator = torch.Generator().manual_seed(4321)
        vocab = int(model.config.vocab_size)
        optimizer = torch.optim.AdamW(model.parameters(), lr=self.config.warmup_learning_rate)
        was_training = model.training
        model.train()
        for _ in range(self.config.warmup_steps):
            tokens = torch.randint(0, vocab, (4, 16), generator=generator)
            loss = model(input_ids=tokens, labels=tokens).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        model.train(was_training)
        return model, peft_config
