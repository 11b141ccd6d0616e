"""Treatments that repair a trainer after it is built (each undoes one cause, whatever planted it).

- `reference_at_start` (h18): with LoRA and a KL term, the reference is a frozen copy of the adapter the run
  started from, as TRL since PR #6591 keeps it; a trainer that lost the copy (or never made one) computes
  the reference with the adapters off, i.e. the base model.
- `restore_repeat_sampler` (h21): TRL's own RepeatSampler, which puts a prompt's num_generations
  completions in one group, in place of a sampler a subclass or wrapper substituted.
- `sync_generator` (h06): the trainer's weights pushed to vLLM before every generation through TRL's own
  `VLLMGeneration.sync_weights` (the class's, so a sync that was switched off or replaced on the instance
  still runs), in place of a sync that did not reach the generator.
- `retry_rewards` (h24): each reward function scores again the completions it gave a failure's default
  value (worker/rewards.py retry_failed); hypotrack's own arms wrap the functions before the trainer is built,
  a user's script (a command experiment) gets its trainer's functions wrapped in place.

These act inside the trainer, so a command experiment takes them without a flag of its script's.
"""

from __future__ import annotations

import types
from typing import Any

from transformers import TrainerCallback


def reference_at_start(trainer: Any) -> bool:
    """Add the "ref" adapter, a copy of the adapter the run starts from; False where there is nothing to repair
    (full fine-tuning keeps its own reference model; no KL term has no reference). The weights are copied again
    when training begins, so an adapter the script loads after building the trainer (resuming from an SFT
    checkpoint) is the one the reference holds."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    config = getattr(model, "peft_config", None)
    if not config or trainer.beta == 0.0 or "ref" in config:
        return False
    active = getattr(model, "active_adapter", "default")
    model.add_adapter("ref", config[active])
    _copy_adapter(model, active, "ref")
    model.set_adapter(active)  # add_adapter leaves the new adapter frozen and the trained one active
    trainer.add_callback(_CopyReferenceAtTrainBegin(model, active))
    return True


def _copy_adapter(model: Any, source: str, target: str) -> None:
    import torch

    with torch.no_grad():
        for name, param in model.named_parameters():
            if f".{source}." in name:
                model.get_parameter(name.replace(f".{source}.", f".{target}.")).copy_(param)


class _CopyReferenceAtTrainBegin(TrainerCallback):
    def __init__(self, model: Any, active: str) -> None:
        self.model, self.active = model, active

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        _copy_adapter(self.model, self.active, "ref")


def apply(trainer: Any, spec: Any, rewards_wrapped: bool = True) -> None:
    """The treatments ``spec`` (an ArmSpec) asks for, on a built trainer (after any planted fault)."""
    if spec.reference_at_start:
        reference_at_start(trainer)
    if spec.repeat_sampler:
        restore_repeat_sampler(trainer)
    if spec.retry_failed_rewards and not rewards_wrapped:
        retry_rewards(trainer)
    if spec.sync_generator:
        sync_generator(trainer)


def sync_generator(trainer: Any) -> bool:
    """Push the weights to vLLM before every generation; False where the trained model generates itself."""
    generation = getattr(trainer, "vllm_generation", None)
    if generation is None:
        return False
    from trl.generation.vllm_generation import VLLMGeneration

    original = trainer._generate

    def generate(*args: Any, **kwargs: Any) -> Any:
        VLLMGeneration.sync_weights(generation)
        trainer._last_loaded_step = trainer.state.global_step  # TRL's own sync has nothing left to do
        return original(*args, **kwargs)

    trainer._generate = generate
    return True


def retry_rewards(trainer: Any) -> None:
    import torch

    from hypotrack.worker.rewards import retry_failed

    trainer.reward_funcs = [f if isinstance(f, torch.nn.Module) else retry_failed(f) for f in trainer.reward_funcs]


def restore_repeat_sampler(trainer: Any) -> None:
    from trl import GRPOTrainer

    trainer._get_train_sampler = types.MethodType(GRPOTrainer._get_train_sampler, trainer)
