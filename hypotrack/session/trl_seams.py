"""The only module that names TRL's private GRPOTrainer members (trl 1.16).

A TrainerCallback sees neither rollouts nor loss tensors, so hypotrack meets TRL at the seams below. Every part
that acts inside a trainer (the hooks' tap, planted faults, treatments, guards) wraps a seam on the trainer
*instance* through `wrap`, whatever the trainer's class: TRL's GRPOTrainer as hypotrack's worker builds it, or
a user's subclass in their own script, whose overrides then run inside the wrapper. Parts that need a private
value (TRL's metric buffer, the step vLLM last loaded) read and write it through the functions here.

tests/test_trl_contract.py checks every seam's parameters against the installed TRL, so a TRL upgrade that
moves one fails there, in one place.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Callable
from typing import Any


class Seam(str, enum.Enum):
    """A GRPOTrainer method hypotrack wraps; the value is the method's name in TRL."""

    REWARDS = "_calculate_rewards"
    """(inputs, prompts, completions, completion_ids_list) -> the (B, F) rewards of every process's completions."""
    ROLLOUT = "_generate_and_score_completions"
    """(inputs) -> the rollout the loss trains on: ids, masks, advantages, old/ref/sampling logprobs."""
    GENERATE = "_generate"
    """(prompts) -> (prompt_ids, completion_ids, tool_mask, completions, logprobs, ...), token ids as lists."""
    LOGPS = "_get_per_token_logps_and_entropies"
    """(model, input_ids, attention_mask, logits_to_keep, ...) -> (logprobs, entropies, aux loss)."""
    LOSS = "_compute_loss"
    """(model, inputs) -> the loss of one micro-batch."""
    TRAIN_SAMPLER = "_get_train_sampler"
    """(dataset=None) -> the sampler that repeats each prompt num_generations times in a row."""
    TRAINING_STEP = "training_step"
    """(model, inputs, num_items_in_batch) -> the micro-batch's loss, after its backward pass (transformers)."""
    SCHEDULER = "create_scheduler"
    """(num_training_steps, optimizer=None) -> the learning-rate schedule (transformers)."""
    OPTIMIZER = "create_optimizer"
    """() -> the optimizer over the trained weights, built when training starts unless one was passed (transformers)."""


# The parameters hypotrack relies on, by seam (tests/test_trl_contract.py checks them against the installed TRL).
SEAM_PARAMETERS: dict[Seam, tuple[str, ...]] = {
    Seam.REWARDS: ("inputs", "prompts", "completions", "completion_ids_list"),
    Seam.ROLLOUT: ("inputs",),
    Seam.GENERATE: ("prompts",),
    Seam.LOGPS: ("model", "input_ids", "attention_mask", "logits_to_keep"),
    Seam.LOSS: ("model", "inputs"),
    Seam.TRAIN_SAMPLER: ("dataset",),
    Seam.TRAINING_STEP: ("model", "inputs", "num_items_in_batch"),
    Seam.SCHEDULER: ("num_training_steps", "optimizer"),
    Seam.OPTIMIZER: (),
}
# What `_generate` returns, in this order (a planted fault rewrites the first five).
GENERATE_RETURNS = "return prompt_ids, completion_ids, tool_mask, completions, logprobs"


def wrap(trainer: Any, seam: Seam, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    """Put ``make(current)`` in place of ``seam`` on this trainer instance.

    ``current`` is what the instance had there before (TRL's method, the user's override, an earlier part's
    wrapper), and the wrapper calls it: parts wrapped later run outside parts wrapped earlier."""
    setattr(trainer, seam.value, make(getattr(trainer, seam.value)))


def restore(trainer: Any, seam: Seam) -> None:
    """Put TRL's own GRPOTrainer method back in place of whatever this instance or its class put there."""
    from trl import GRPOTrainer

    setattr(trainer, seam.value, types.MethodType(getattr(GRPOTrainer, seam.value), trainer))


def has_seams(trainer: Any) -> bool:
    """Whether ``trainer`` has every seam (a GRPOTrainer of this TRL, or a subclass)."""
    return all(callable(getattr(trainer, seam.value, None)) for seam in Seam)


def record_metric(trainer: Any, key: str, value: float) -> None:
    """Append a value to TRL's metric buffer of the trainer's current mode: TRL averages it per logging step and
    logs it with its own keys, to every tracker the trainer reports to."""
    trainer._metrics["train" if trainer.model.training else "eval"][key].append(value)


def reset_metric_buffer(trainer: Any) -> None:
    """Empty TRL's metric buffers (a loss computed outside training must not leak into the next log)."""
    from collections import defaultdict

    trainer._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}


def logged_metric(trainer: Any, key: str, mode: str = "train") -> list[float]:
    """The values of ``key`` in TRL's metric buffer since the last log."""
    return list(trainer._metrics[mode].get(key, []))


def mark_generator_synced(trainer: Any) -> None:
    """Tell TRL the generator already holds this step's weights (its own sync then has nothing left to do)."""
    trainer._last_loaded_step = trainer.state.global_step


def policy_logps(trainer: Any, model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int) -> Any:
    """The per-token logprobs of the last ``logits_to_keep`` tokens as TRL's loss computes them (its temperature,
    its fused head), or None for a trainer without the seam."""
    method = getattr(trainer, Seam.LOGPS.value, None)
    if method is None:
        return None
    return method(model, input_ids, attention_mask, logits_to_keep)[0]


def compute_loss(trainer: Any, model: Any, inputs: dict[str, Any]) -> Any:
    """TRL's loss of one micro-batch, as the trainer computes it (for the loss parity check)."""
    return getattr(trainer, Seam.LOSS.value)(model, inputs)
