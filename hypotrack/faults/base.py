"""The contract of a planted fault: a faithful copy of a real GRPO bug, declared on its own class.

A planted fault is part of the run being debugged: it applies to both arms, and a hypothesis's treatment is
the fix that should make it harmless. `hypotrack selftest` plants each one in the toy lab and checks that its
hypothesis, and no other, catches it.

A fault describes itself on its class, as a diagnostics hook does (hooks/base.py): its ``name``, the
hypothesis it ``imitates``, a ``description`` of what it does (naming the upstream issue or pull request it
copies), the ``seams`` it touches (from `SEAMS`), its ``Settings`` (a dataclass: one field per knob, each with
its default and a docstring under it) and, for the self-test, ``signature_steps``, ``needs_vllm``,
``needs_full_fine_tuning`` and
``not_shown_on_toy``. It then overrides the stages it acts at, each called for every arm:

- `configure(arm)`: the resolved arm's settings, on the runner's side, before the hypothesis's treatment (so a
  treatment such as ``--max-prompt-length`` still overrides them); no torch here;
- `model(model, peft_config)`: the model and adapter config the trainer is built with;
- `reward_functions(functions, task_index)`: the experiment's reward functions (training and held-out
  evaluation alike: the bug is in the user's function);
- `rewards(trainer, rewards_per_func, inputs, completions, task_index)`: the rewards TRL computed;
- `attach(trainer)`: the built trainer, through its seams (session/trl_seams.py).

faults/manifest.py reads the catalogue off the classes without importing torch, so a fault module imports
torch inside its methods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from hypotrack import units

# What a fault or a treatment can touch, by the name it declares in ``seams``: a stage before the trainer exists,
# something a built trainer holds, or one of TRL's seams (session/trl_seams.py's Seam, by its name in lower case;
# tests/test_faults.py checks that each is here: this module stays free of the session's imports).
SEAMS: dict[str, str] = {
    "config": "the arm's settings (GRPOConfig fields, data, LoRA), before the hypothesis's treatment",
    "model": "the model the trainer is built with (an adapter trained before the run)",
    "reward_functions": "the experiment's reward functions, in training and in the held-out evaluation",
    "generator_sync": "TRL's push of the trained weights to vLLM",
    "generator_dtype": "the dtype vLLM serves the model in",
    "loss": "the loss's settings on the built trainer (the KL coefficient)",
    "reference": "the KL reference TRL keeps: an adapter's 'ref' adapter, or full fine-tuning's reference model",
    "input_embeddings": "the embeddings' hook that hands gradient checkpointing an input that requires grad",
    "rewards": "the rewards TRL computed for a batch (its reward seam)",
    "rollout": "a finished rollout, before the hooks and the loss see it (TRL's rollout seam)",
    "generate": "TRL's generation (its generate seam)",
    "logps": "the policy's per-token logprobs (TRL's logprob seam)",
    "train_sampler": "TRL's sampler, which puts a prompt's completions in one group",
    "scheduler": "the learning-rate schedule",
    "optimizer": "the optimizer and the weights it holds",
    "training_step": "each micro-batch's training step",
}


@dataclass(frozen=True)
class NoSettings:
    """A fault without settings."""


class PlantedFault:
    """Base class: declare what the fault is and copies, override the stages it acts at."""

    name: ClassVar[str] = ""
    imitates: ClassVar[str] = ""  # the hypothesis id whose cause this fault is
    description: ClassVar[str] = ""
    seams: ClassVar[tuple[str, ...]] = ()
    Settings: ClassVar[type] = NoSettings
    # Training steps after which the signature is visible (the compact self-test); None: from the first step.
    signature_steps: ClassVar[int | None] = None
    # Why it needs an experiment that generates with vLLM; "" where it does not.
    needs_vllm: ClassVar[str] = ""
    # Why it needs full fine-tuning (an experiment without LoRA); "" where adapters can show it too.
    needs_full_fine_tuning: ClassVar[str] = ""
    # Why the toy lab cannot show it within a self-test's run (the default self-test leaves it out); "" where it can.
    not_shown_on_toy: ClassVar[str] = ""

    def __init__(self, **settings: Any) -> None:
        self.config = units.settings_of("planted fault", self.name, self.Settings, settings)

    @classmethod
    def setting_defaults(cls) -> dict[str, Any]:
        return units.setting_defaults(cls.Settings)

    @classmethod
    def setting_docs(cls) -> dict[str, str]:
        return units.setting_docs(cls.Settings)

    def configure(self, arm: dict[str, Any]) -> None:
        """Change a resolved arm (its ``grpo``, ``data``, ``lora``, ``rewards``, ``reward_weights`` ... keys)."""

    def model(self, model: Any, peft_config: Any) -> tuple[Any, Any]:
        return model, peft_config

    def reward_functions(self, functions: list[Callable[..., Any]], task_index: int) -> list[Callable[..., Any]]:
        return functions

    def rewards(self, trainer: Any, rewards_per_func: Any, inputs: list[dict[str, Any]], completions: list[Any],
                task_index: int) -> Any:
        return rewards_per_func

    def attach(self, trainer: Any) -> None:
        """Act on the built trainer (wrap its seams through session/trl_seams.py)."""


def auxiliary_index(task_index: int) -> int:
    """The column of the first auxiliary reward (the faults that plant one put it there)."""
    return 1 if task_index == 0 else 0


def weigh_auxiliaries(arm: dict[str, Any], times_task: float) -> None:
    """Every auxiliary reward of a resolved arm weighs ``times_task`` the task reward's weight."""
    if len(arm["rewards"]) < 2:
        return
    weights = arm["reward_weights"] or [1.0] * len(arm["rewards"])
    task = arm["task_reward_index"]
    arm["reward_weights"] = [weights[task] * times_task] * len(weights)
    arm["reward_weights"][task] = weights[task]


def with_kl_term(arm: dict[str, Any], beta: float) -> None:
    """A bug that needs a KL term gets one where the run has none (the toy lab's own runs have none)."""
    if not arm["grpo"].get("beta"):
        arm["grpo"]["beta"] = beta


def set_config(arm: dict[str, Any], changes: dict[str, Any]) -> None:
    """Apply "section.key" changes (grpo., data., lora.) to a resolved arm; LoRA settings only where it has LoRA."""
    for dotted, value in changes.items():
        section, key = dotted.split(".", 1)
        if section == "lora" and not arm["lora"].get("enabled", True):
            continue  # full fine-tuning: no adapter settings to change
        arm[section][key] = value
