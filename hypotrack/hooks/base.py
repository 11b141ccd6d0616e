"""The contract between a GRPO trainer and the diagnostics hooks.

A hook describes itself on its class: its ``name``, a one-line ``description``, the ``metrics`` it
emits, a ``Settings`` dataclass (one field per setting, each with its default and a docstring under
it), and the events it handles (the ``on_*`` methods below it overrides). hooks/manifest.py derives
the loader's catalogue from these declarations, so a hook module must import torch lazily (inside
the methods): the spec loader and the fast CLI import every hook module without torch.

The arm's session (hypotrack/session/: hypotrack's worker, a command experiment's script and
``hypotrack.watch`` alike) builds a `RolloutBatch` after every generation and a `LossParts` inside every
loss computation, and a `HookSet` (hooks/hookset.py) hands them to the hooks that handle them. A hook returns plain floats
keyed by short names; the HookSet prefixes them with ``diag/<hook name>/`` and records them in TRL's
own metric buffer, so they are averaged per logging step exactly like ``reward`` and reach every
tracker the trainer reports to under the same step numbers.

Hooks must not keep tensors from one step to the next (memory stays flat over
long runs): reduce to floats inside the call, keep at most a few small samples
for artifacts.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from hypotrack import units

if TYPE_CHECKING:  # torch stays out of the import path of the fast CLI
    import torch


@dataclass
class RolloutBatch:
    """One generation batch as TRL's rollout seam produced it (session/trl_seams.py).

    Shapes: B = prompts x num_generations (local process), P = prompt tokens,
    C = completion tokens, F = reward functions.
    """

    prompt_ids: "torch.Tensor"  # (B, P), left padded
    prompt_mask: "torch.Tensor"  # (B, P), 1 = real prompt token
    completion_ids: "torch.Tensor"  # (B, C), right padded
    completion_mask: "torch.Tensor"  # (B, C), 1 = token that carries loss (TRL's mask)
    advantages: "torch.Tensor"  # (B,) as the loss will see them
    rewards_per_func: "torch.Tensor"  # (B, F), NaN where a reward function gave no value
    reward_weights: "torch.Tensor"  # (F,)
    reward_func_names: list[str]
    num_generations: int
    scale_rewards: str  # "group" | "batch" | "none"
    pad_token_id: int | None
    eos_token_id: int | None
    prompts_text: list[str]
    completions_text: list[str]
    # GRPOConfig.multi_objective_aggregation: how rewards_per_func became advantages
    aggregation: str = "sum_then_normalize"  # | "normalize_then_sum"
    # Which column of rewards_per_func is the task reward (the experiment's task_reward); the others
    # are auxiliary rewards.
    task_index: int = 0
    # Optional tensors, present when TRL computed them
    old_per_token_logps: "torch.Tensor | None" = None
    ref_per_token_logps: "torch.Tensor | None" = None
    sampling_per_token_logps: "torch.Tensor | None" = None
    # TRL's importance weights for vLLM's sampling (vllm_importance_sampling_correction): (B, 1) per completion in
    # its sequence modes, (B, C) per token in its token modes, after its cap or mask
    importance_sampling_ratio: "torch.Tensor | None" = None
    tool_mask: "torch.Tensor | None" = None  # (B, C), 1 = model-written token, 0 = tool/environment output
    # Per-row dataset columns other than prompt (e.g. "answer", "answer_start", "answer_end",
    # "prompt_full_length" before truncation); each value is a list of length B.
    columns: dict[str, list[Any]] = field(default_factory=dict)
    # Number of reward-function calls that raised in this batch, per function name.
    reward_errors: dict[str, int] = field(default_factory=dict)
    tokenizer: Any = None  # the processing class, for decoding samples
    # Extra masks the toy lab knows about (for planted faults): e.g. "environment_mask" (B, C),
    # 1 = token that was environment output in a multi-turn completion.
    extra_masks: dict[str, "torch.Tensor"] = field(default_factory=dict)
    # The run's reward functions (TRL's signature, in the order of rewards_per_func's columns), the
    # prompts as the dataset gave them (text or conversation), and the column holding each row's
    # reference answer (the experiment's data.reference_column), for checks that score known answers.
    reward_funcs: list[Any] = field(default_factory=list)
    prompts: list[Any] = field(default_factory=list)
    reference_column: str | None = None


@dataclass
class LossParts:
    """The tensors of one loss computation (TRL's loss seam, session/trl_seams.py), detached."""

    per_token_logps: "torch.Tensor"  # (B, C) policy logprobs of the completion tokens
    old_per_token_logps: "torch.Tensor"  # (B, C)
    ref_per_token_logps: "torch.Tensor | None"  # (B, C) None when beta == 0
    mask: "torch.Tensor"  # (B, C) the loss mask (completion_mask * tool_mask)
    advantages: "torch.Tensor"  # (B,)
    beta: float
    loss_type: str
    loss: float  # the value TRL returned (before gradient accumulation scaling is undone)
    prompt_ids: "torch.Tensor | None" = None
    prompt_mask: "torch.Tensor | None" = None
    completion_ids: "torch.Tensor | None" = None
    entropies: "torch.Tensor | None" = None  # (B, C) the policy's per-token entropy, when TRL computed it
    # Whether TRL recomputed the old policy's logprobs for this batch (num_iterations > 1, or more
    # generation steps than accumulation steps); otherwise old_per_token_logps is the policy's own.
    old_recomputed: bool = False


@dataclass
class StepContext:
    """What a hook may look at after the optimizer step."""

    step: int
    model: Any  # the trained model (a peft model when LoRA is on)
    ref_model: Any  # TRL's reference model, or None (beta == 0, or LoRA where the reference is the adapter-disabled model)
    trainer: Any


@dataclass(frozen=True)
class NoSettings:
    """A hook without settings."""


# The events a hook can handle, in the order a training step meets them.
EVENTS = ("on_train_begin", "on_rollout", "on_loss", "on_before_optimizer_step", "on_step_end", "on_train_end")


class DiagnosticHook:
    """Base class: declare what the hook is, override the events it handles; each returns {metric_name: float}.

    ``Settings`` is a dataclass; ``hook.config`` is its instance for this hook, ``hook.settings`` the same
    as a dict. An unknown setting raises ValueError naming the accepted ones.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    metrics: ClassVar[tuple[str, ...]] = ()
    # The experiment's declarations the hook reads (data.reference_column): where the session inferred one from the
    # run (session/inference.py), the verdict of a hypothesis with this hook says what was inferred.
    reads: ClassVar[tuple[str, ...]] = ()
    Settings: ClassVar[type] = NoSettings
    # A hook with nothing more to say (a check of the first steps, done) sets this False: the HookSet
    # stops calling it and stops building the events only it wanted.
    active: bool = True

    def __init__(self, **settings: Any) -> None:
        self.config = units.settings_of("hook", self.name, self.Settings, settings)
        self.settings: dict[str, Any] = dataclasses.asdict(self.config)

    @classmethod
    def handles(cls, event: str) -> bool:
        """Whether this hook overrides ``event`` (the HookSet calls a hook only for the events it handles)."""
        return getattr(cls, event) is not getattr(DiagnosticHook, event)

    @classmethod
    def setting_defaults(cls) -> dict[str, Any]:
        return units.setting_defaults(cls.Settings)

    @classmethod
    def setting_docs(cls) -> dict[str, str]:
        return units.setting_docs(cls.Settings)

    def on_train_begin(self, ctx: StepContext) -> dict[str, float]:
        return {}

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        return {}

    def on_loss(self, parts: LossParts, step: int) -> dict[str, float]:
        return {}

    def on_before_optimizer_step(self, ctx: StepContext) -> dict[str, float]:
        """After backward, before the optimizer uses the gradients (gradients are readable here)."""
        return {}

    def on_step_end(self, ctx: StepContext) -> dict[str, float]:
        return {}

    def on_train_end(self, ctx: StepContext) -> dict[str, float]:
        return {}

    def close(self) -> None:
        """Remove whatever the hook registered on the model (torch hooks); called once training ends."""

    def write_artifacts(self, out_dir: Path) -> list[Path]:
        """Write HTML/PNG/JSON artifacts at the end of training; return their paths."""
        return []
