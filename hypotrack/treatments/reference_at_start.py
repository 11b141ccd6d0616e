"""h18's fix: the KL reference is the policy the run starts from."""

from __future__ import annotations

from typing import Any

from hypotrack.treatments.base import Treatment


class ReferenceAtStart(Treatment):
    name = "reference_at_start"
    fixes = "h18"
    help = ("Treatment arm: the KL reference is the policy the run starts from (a copy of the adapter it loaded, or "
            "of the fully fine-tuned model as training begins), not the base model with the adapters off or the "
            "checkpoint on disk.")
    seams = ("reference",)

    def attach(self, trainer: Any) -> None:
        """With a KL term, the reference is the policy the run starts from. With LoRA it is a frozen copy of the
        adapter the run started from, as TRL since PR #6591 keeps it; a trainer that lost the copy (or never made
        one) computes the reference with the adapters off, i.e. the base model. With full fine-tuning TRL loads the
        reference from the model's path, which misses whatever the script did to the model in memory: the policy's
        weights are copied into it. Either copy is made again when training begins, so an adapter the script loads
        after building the trainer (resuming from an SFT checkpoint) is the one the reference holds. Nothing to do
        without a KL term, or where a "ref" adapter is already there."""
        model = trainer.accelerator.unwrap_model(trainer.model)
        config = getattr(model, "peft_config", None)
        if trainer.beta == 0.0:
            return
        if not config:
            reference = getattr(trainer, "ref_model", None)
            if reference is not None:  # full fine-tuning: TRL loaded its reference from the model's path
                trainer.add_callback(copy_model_at_train_begin(model, trainer.accelerator.unwrap_model(reference)))
            return
        if "ref" in config:
            return
        active = getattr(model, "active_adapter", "default")
        model.add_adapter("ref", config[active])
        copy_adapter(model, active, "ref")
        model.set_adapter(active)  # add_adapter leaves the new adapter frozen and the trained one active
        trainer.add_callback(copy_at_train_begin(model, active))


def copy_adapter(model: Any, source: str, target: str) -> None:
    import torch

    with torch.no_grad():
        for name, param in model.named_parameters():
            if f".{source}." in name:
                model.get_parameter(name.replace(f".{source}.", f".{target}.")).copy_(param)


def copy_at_train_begin(model: Any, active: str) -> Any:
    """A TrainerCallback that copies the active adapter into the reference when training begins."""
    from transformers import TrainerCallback

    class CopyReferenceAtTrainBegin(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            copy_adapter(model, active, "ref")

    return CopyReferenceAtTrainBegin()


def copy_model_at_train_begin(model: Any, reference: Any) -> Any:
    """A TrainerCallback that copies the policy's weights into full fine-tuning's reference model when training
    begins: whatever the script did to the model in memory before (a warm-up), the reference is where the run
    starts."""
    from transformers import TrainerCallback

    class CopyPolicyIntoReference(TrainerCallback):
        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            import torch

            with torch.no_grad():
                reference.load_state_dict(model.state_dict())

    return CopyPolicyIntoReference()
