"""Treatments that repair a trainer after it is built (each undoes one cause, whatever planted it).

- `reference_at_start` (h18): with LoRA and a KL term, the reference is a frozen copy of the adapter the run
  started from, as TRL since PR #6591 keeps it; a trainer that lost the copy (or never made one) computes
  the reference with the adapters off, i.e. the base model.
- `restore_repeat_sampler` (h21): TRL's own RepeatSampler, which puts a prompt's num_generations
  completions in one group, in place of a sampler a subclass or wrapper substituted.
"""

from __future__ import annotations

import types
from typing import Any


def reference_at_start(trainer: Any) -> bool:
    """Add the "ref" adapter as a copy of the starting one; False where there is nothing to repair (full
    fine-tuning keeps its own reference model; no KL term has no reference)."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    config = getattr(model, "peft_config", None)
    if not config or trainer.beta == 0.0 or "ref" in config:
        return False
    active = getattr(model, "active_adapter", "default")
    model.add_adapter("ref", config[active])
    for name, param in model.named_parameters():
        if f".{active}." in name:
            model.get_parameter(name.replace(f".{active}.", ".ref.")).data.copy_(param.data)
    model.set_adapter(active)  # add_adapter leaves the new adapter frozen and the trained one active
    return True


def restore_repeat_sampler(trainer: Any) -> None:
    from trl import GRPOTrainer

    trainer._get_train_sampler = types.MethodType(GRPOTrainer._get_train_sampler, trainer)
