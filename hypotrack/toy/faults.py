"""Planted faults: faithful copies of real GRPO bugs, switched on by `plant:` or `--plant`.

Each fault acts at the same seams the diagnostics observe (rewards, the rollout
batch, the loss inputs, the trainer's configuration), so `hypotrack selftest`
can show that each hypothesis catches its own bug and stays quiet otherwise.
A fault is part of the setup being debugged: it applies to both arms, and a
hypothesis's treatment is the fix that should make it harmless.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

# name -> (hypothesis it imitates, what it does)
FAULTS: dict[str, tuple[str, str]] = {
    "tiny_std_rewards": ("h01", "the task reward carries +-1e-3 numeric noise (a bf16 reward model), so tied "
                                "groups get a tiny std that group scaling blows up to unit-size advantages"),
    "prompt_in_loss": ("h02", "the rollout hands back the prompt tokens in front of the completion (the "
                              "return_full_text mistake), so the loss trains on the prompt"),
    "kl_wrong_sign": ("h03", "the KL term enters the loss with a negative coefficient, rewarding divergence "
                             "from the reference"),
    "truncate_answer": ("h04", "prompts are cut to a budget that drops the paragraph holding the answer"),
    "noisy_reward_component": ("h05", "an auxiliary reward component answers at random (a flaky judge: 0 or 1 "
                                      "by coin flip) and weighs as much as the task reward"),
    "lora_not_synced": ("h06", "generation runs with the LoRA adapters disabled, so rollouts never come from "
                               "the trained policy"),
}

# Config-level parts, applied when the arms are resolved (before the hypothesis's own changes,
# so a treatment such as --max-prompt-length still overrides them).
CONFIG_CHANGES: dict[str, dict[str, Any]] = {
    "truncate_answer": {"data.max_prompt_length": 96, "data.truncation_side": "left"},
}


def apply_config(name: str, arm: dict[str, Any]) -> None:
    """Apply a fault's config-level changes to a resolved arm dict (data.* / grpo.* keys)."""
    for dotted, value in CONFIG_CHANGES.get(name, {}).items():
        section, key = dotted.split(".", 1)
        arm[section][key] = value
    if name == "noisy_reward_component" and len(arm["rewards"]) > 1:
        # The noise gets the task reward's weight: it weighs as much in the advantages as the task does.
        weights = arm["reward_weights"] or [1.0] * len(arm["rewards"])
        arm["reward_weights"] = [weights[arm["task_reward_index"]]] * len(weights)


def _jitter(count: int, step: int, seed: int):
    """Per-sample noise in [-1e-3, 1e-3], as from a reward model run in bf16 with batch-dependent
    numerics: identical completions get slightly different scores."""
    import torch

    generator = torch.Generator().manual_seed(step * 104729 + seed)
    return (torch.rand(count, generator=generator) * 2 - 1) * 1e-3


@dataclass
class Faults:
    names: list[str]

    def attach(self, trainer) -> None:  # noqa: ANN001
        if "kl_wrong_sign" in self.names and trainer.beta != 0.0:
            trainer.beta = -abs(trainer.beta)
        if "lora_not_synced" in self.names:
            _generate_without_adapters(trainer)
        if "prompt_in_loss" in self.names:
            _return_prompt_with_completion(trainer)

    def rewards(self, trainer, rewards_per_func, inputs, completions):  # noqa: ANN001
        import torch

        if "tiny_std_rewards" in self.names:
            jitter = _jitter(rewards_per_func.shape[0], trainer.state.global_step, trainer.args.seed)
            rewards_per_func = rewards_per_func.clone()
            task = trainer.task_reward_index
            rewards_per_func[:, task] = rewards_per_func[:, task] + jitter.to(rewards_per_func)
        if "noisy_reward_component" in self.names and rewards_per_func.shape[1] > 1:
            generator = torch.Generator().manual_seed(trainer.state.global_step * 7919 + trainer.args.seed)
            rewards_per_func = rewards_per_func.clone()
            # coin flips: a judge that answers at random, on the task reward's 0/1 scale and with its spread
            noise = (torch.rand(rewards_per_func.shape[0], generator=generator) < 0.5).float()
            aux = 1 if trainer.task_reward_index == 0 else 0
            rewards_per_func[:, aux] = noise.to(rewards_per_func.device)
        return rewards_per_func



def _return_prompt_with_completion(trainer) -> None:  # noqa: ANN001
    """Wrap TRL's generation so each completion's token ids start with the prompt's (bos excluded).

    The reward still scores the real completion text, as when only the token ids
    handed to the trainer carry the prompt: nothing looks wrong in the rewards,
    but every step trains the policy to reproduce its input.
    """
    original: Callable[..., Any] = trainer._generate
    bos = trainer.processing_class.bos_token_id

    def generate(*args: Any, **kwargs: Any):
        out = list(original(*args, **kwargs))
        prompt_ids, completion_ids, tool_mask, _completions, logprobs = out[:5]
        echoed = [[t for t in list(p) if t != bos] for p in prompt_ids]
        out[1] = [e + list(c) for e, c in zip(echoed, completion_ids)]
        if tool_mask is not None:
            out[2] = [[1] * len(e) + list(m) for e, m in zip(echoed, tool_mask)]
        if logprobs is not None:
            out[4] = [[None] * len(e) + list(lp) for e, lp in zip(echoed, logprobs)]
        return tuple(out)

    trainer._generate = generate


def _generate_without_adapters(trainer) -> None:  # noqa: ANN001
    """Wrap TRL's generation so it samples from the base weights: the trained adapters never reach it."""
    original: Callable[..., Any] = trainer._generate

    def generate(*args: Any, **kwargs: Any):
        model = trainer.accelerator.unwrap_model(trainer.model)
        if not hasattr(model, "disable_adapter"):
            return original(*args, **kwargs)  # full fine-tuning: nothing to desynchronise
        with model.disable_adapter():
            return original(*args, **kwargs)

    trainer._generate = generate


def build_faults(names: list[str]) -> Faults:
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        from hypotrack.errors import HypotrackError

        raise HypotrackError(f"unknown planted fault(s) {unknown} (known: {', '.join(FAULTS)})")
    return Faults(list(names))
