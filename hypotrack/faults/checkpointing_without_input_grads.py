"""h19's cause: reentrant gradient checkpointing that the frozen embeddings hand no input requiring grad."""

from __future__ import annotations

from typing import Any

from hypotrack.faults.base import PlantedFault, set_config


class CheckpointingWithoutInputGrads(PlantedFault):
    name = "checkpointing_without_input_grads"
    imitates = "h19"
    description = ("reentrant gradient checkpointing while the frozen input embeddings hand the checkpointed layers no "
                   "input that requires grad (trl#2671, trl#3150: enable_input_require_grads never called): the "
                   "layers' adapters get no gradient, only the output head the run also trains learns")
    seams = ("config", "input_embeddings")

    def configure(self, arm: dict[str, Any]) -> None:
        # the user's checkpointing settings; the run also trains the (tied) output head, as a run that added tokens does
        set_config(arm, {"grpo.gradient_checkpointing": True,
                         "grpo.gradient_checkpointing_kwargs": {"use_reentrant": True},
                         "lora.modules_to_save": ["lm_head"]})

    def attach(self, trainer: Any) -> None:
        """Take out the embeddings' forward hook that marks their output as requiring grad, and keep it out
        (gradient_checkpointing_enable, which TRL calls again after each no-grad pass, adds it back): the
        transformers and TRL releases before their PEFT fix never added it."""
        from transformers import PreTrainedModel

        model = trainer.accelerator.unwrap_model(trainer.model)
        for module in [model, *model.modules()]:
            if isinstance(module, PreTrainedModel) or hasattr(module, "enable_input_require_grads"):
                module.enable_input_require_grads = lambda: None
        embeddings = model.get_input_embeddings()
        for key, hook in list(embeddings._forward_hooks.items()):
            if getattr(hook, "__name__", "") == "make_inputs_require_grads":
                del embeddings._forward_hooks[key]
