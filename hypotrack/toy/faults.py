"""Planted faults: faithful copies of real GRPO bugs, switched on by `plant:` or `--plant`.

Each fault acts at the same seams the diagnostics observe (rewards, the rollout
batch, the loss inputs, the trainer's configuration), so `hypotrack selftest`
can show that each hypothesis catches its own bug and stays quiet otherwise.
A fault is part of the setup being debugged: it applies to both arms, and a
hypothesis's treatment is the fix that should make it harmless. Where a fault copies
a bug reported upstream, its description names the issue or pull request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .fault_catalog import FAULTS, NEEDS_VLLM
from .text import completion_text

# Training steps after which a fault's signature is visible, for the compact selftest. Most faults show
# from the first step (a batch's make-up, a loss term, a reward); these build up over training.
SIGNATURE_STEPS: dict[str, int] = {
    "low_sampling_temperature": 12,  # identical completions spread as the sharpened policy repeats itself
    "learning_rate_too_high": 10,  # the held-out drop needs updates to accumulate
    "biased_judge": 30,  # the policy has to learn the judge's preference before its trend shows
    "noisy_reward_component": 8,  # h05 tells a noisy auxiliary reward from a climbing one by its trend
    "schedule_counts_batches": 16,  # the rate reaches 0 a quarter of the way in; a quarter must remain after it
    "schedule_stepped_per_micro_batch": 16,  # the same course, from a schedule stepped four times per update
    "length_normalised_loss": 40,  # a length drift needs many updates (the default self-test leaves it out)
}

# Config-level parts, applied when the arms are resolved (before the hypothesis's own changes,
# so a treatment such as --max-prompt-length still overrides them).
CONFIG_CHANGES: dict[str, dict[str, Any]] = {
    "truncate_answer": {"data.max_prompt_length": 96, "data.truncation_side": "left"},
    "completion_budget_too_short": {"grpo.max_completion_length": 1},
    "sampling_temperature_not_scored": {"grpo.generation_kwargs": {"temperature": 0.7}},
    "low_sampling_temperature": {"grpo.temperature": 0.3},
    # the user's checkpointing settings; the run also trains the (tied) output head, as a run that added tokens does
    "checkpointing_without_input_grads": {"grpo.gradient_checkpointing": True,
                                          "grpo.gradient_checkpointing_kwargs": {"use_reentrant": True},
                                          "lora.modules_to_save": ["lm_head"]},
    "schedule_counts_batches": {"grpo.lr_scheduler_type": "linear", "grpo.warmup_steps": 0},
    # the user's schedule over the whole run, and four micro-batches per optimizer update
    "schedule_stepped_per_micro_batch": {"grpo.lr_scheduler_type": "linear", "grpo.warmup_steps": 0,
                                         "grpo.gradient_accumulation_steps": 4},
    "length_normalised_loss": {"grpo.loss_type": "grpo", "grpo.max_completion_length": 16},
}
LEARNING_RATE_FACTOR = 20.0  # learning_rate_too_high
KL_BETA = 0.04  # kl_wrong_sign on a run without a KL term: the usual GRPO recipes' coefficient
AUXILIARY_WEIGHT = {"noisy_reward_component": 1.0, "biased_judge": 2.0,
                    "unnormalised_reward_scales": 1.0}  # times the task's weight
ADAPTER_STD = 0.05  # reference_without_adapter: the spread of the trained adapter's B weights
SCHEDULE_HORIZON_SHARE = 0.25  # schedule_counts_batches: the schedule's horizon, as a share of the run
AUXILIARY_SCALE = 10.0  # unnormalised_reward_scales: the auxiliary reward model's top score
TIMEOUT_SHARE = 0.4  # verifier_timeouts_scored_zero: verifications that run out of time


def apply_config(name: str, arm: dict[str, Any]) -> None:
    """Apply a fault's config-level changes to a resolved arm dict (data.* / grpo.* keys)."""
    if name in NEEDS_VLLM and not arm["grpo"].get("use_vllm"):
        from hypotrack.errors import HypotrackError

        raise HypotrackError(f"the planted fault {name} needs an experiment that generates with vLLM (use_vllm: "
                             f"true, such as toy_arith_vllm): {FAULTS[name][1]}")
    for dotted, value in CONFIG_CHANGES.get(name, {}).items():
        section, key = dotted.split(".", 1)
        if section == "lora" and not arm["lora"].get("enabled", True):
            continue  # full fine-tuning: no adapter settings to change
        arm[section][key] = value
    if name == "generator_precision_lowered":
        arm["generator_dtype"] = "bfloat16"
    if name in ("kl_wrong_sign", "reference_without_adapter") and not arm["grpo"].get("beta"):
        # the bug needs a KL term to put the wrong sign on: the toy lab's own runs have none
        arm["grpo"]["beta"] = KL_BETA
    if name == "learning_rate_too_high":
        arm["grpo"]["learning_rate"] = arm["grpo"].get("learning_rate", 1e-6) * LEARNING_RATE_FACTOR
    if name in AUXILIARY_WEIGHT and len(arm["rewards"]) > 1:
        # The planted auxiliary reward weighs this many times the task reward.
        weights = arm["reward_weights"] or [1.0] * len(arm["rewards"])
        arm["reward_weights"] = [weights[arm["task_reward_index"]] * AUXILIARY_WEIGHT[name]] * len(weights)
        arm["reward_weights"][arm["task_reward_index"]] = weights[arm["task_reward_index"]]


def _jitter(count: int, step: int, seed: int):
    """Per-sample noise in [-1e-3, 1e-3], as from a reward model run in bf16 with batch-dependent
    numerics: identical completions get slightly different scores."""
    import torch

    generator = torch.Generator().manual_seed(step * 104729 + seed)
    return (torch.rand(count, generator=generator) * 2 - 1) * 1e-3


@dataclass
class Faults:
    names: list[str]

    def attach(self, trainer) -> None:
        if "kl_wrong_sign" in self.names and trainer.beta != 0.0:
            trainer.beta = -abs(trainer.beta)
        if "lora_not_synced" in self.names:
            _generate_without_adapters(trainer)
        if "generator_sync_skipped" in self.names:
            _skip_generator_sync(trainer)
        if "prompt_in_loss" in self.names:
            _return_prompt_with_completion(trainer)
        if "reference_without_adapter" in self.names:
            _reference_without_adapter(trainer)
        if "checkpointing_without_input_grads" in self.names:
            _no_input_require_grads(trainer)
        if "groups_of_mixed_prompts" in self.names:
            _shuffle_within_generation_batch(trainer)
        if "schedule_counts_batches" in self.names:
            _short_schedule_horizon(trainer)
        if "schedule_stepped_per_micro_batch" in self.names:
            _schedule_step_per_micro_batch(trainer)

    def model(self, model, peft_config):  # (model, peft_config) as the trainer gets them
        """The model and adapter config the trainer is built with: a LoRA run continuing from a trained adapter
        gets a peft model with that adapter (and no peft_config, as a user who loaded it passes none)."""
        if "reference_without_adapter" in self.names and peft_config is not None:
            return _with_trained_adapter(model, peft_config), None
        return model, peft_config

    def reward_functions(self, functions: list[Any], task_index: int) -> list[Any]:
        """The experiment's reward functions as the faults leave them (training and evaluation alike)."""
        functions = list(functions)
        if "reward_never_matches" in self.names:
            functions[task_index] = _never_matches(functions[task_index])
        if "verifier_timeouts_scored_zero" in self.names:
            functions[task_index] = _scored_zero_on_timeout(functions[task_index])
        return functions

    def rewards(self, trainer, rewards_per_func, inputs, completions):
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
        if "bimodal_difficulty" in self.names:
            rewards_per_func = _all_or_nothing(rewards_per_func.clone(), trainer, inputs)
        if "biased_judge" in self.names and rewards_per_func.shape[1] > 1:
            rewards_per_func = rewards_per_func.clone()
            aux = 1 if trainer.task_reward_index == 0 else 0
            # a near miss of an odd answer is even: the judge's preference varies within most groups
            even = [1.0 if _leading_number(completion_text(c)) % 2 == 0 else 0.0 for c in completions]
            rewards_per_func[:, aux] = torch.tensor(even, dtype=rewards_per_func.dtype).to(rewards_per_func.device)
        if "unnormalised_reward_scales" in self.names and rewards_per_func.shape[1] > 1:
            rewards_per_func = rewards_per_func.clone()
            aux = 1 if trainer.task_reward_index == 0 else 0
            scores = [_style_score(completion_text(c)) for c in completions]
            rewards_per_func[:, aux] = torch.tensor(scores, dtype=rewards_per_func.dtype).to(rewards_per_func.device)
        return rewards_per_func



def _leading_number(text: str) -> int:
    digits = ""
    for char in text.strip():
        if not char.isdigit():
            break
        digits += char
    return int(digits) if digits else -1


def _never_matches(original: Callable[..., list[float]]) -> Callable[..., list[float]]:
    """The task reward with a parser that never matches: 0 for every completion."""

    def never_matches(*args: Any, **kwargs: Any) -> list[float]:
        original(*args, **kwargs)  # the real function still runs (and can still raise); its verdict is lost
        return [0.0] * len(kwargs.get("completions", args[0] if args else []))

    never_matches.__name__ = getattr(original, "__name__", "task_reward")
    return never_matches


def _all_or_nothing(rewards_per_func, trainer, inputs):
    """90% of prompts (by a hash of the prompt) become all-or-nothing: the task reward of every completion of
    such a prompt is 1 for half of them and 0 for the others, whatever the completion says."""
    import zlib

    task = trainer.task_reward_index
    for row, item in enumerate(inputs):
        code = zlib.crc32(str(item.get("prompt")).encode())
        if code % 10:
            rewards_per_func[row, task] = float(code % 2)
    return rewards_per_func


def _return_prompt_with_completion(trainer) -> None:
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


def _generate_without_adapters(trainer) -> None:
    """Wrap TRL's generation so it samples from the base weights: the trained adapters never reach it."""
    original: Callable[..., Any] = trainer._generate

    def generate(*args: Any, **kwargs: Any):
        model = trainer.accelerator.unwrap_model(trainer.model)
        if not hasattr(model, "disable_adapter"):
            return original(*args, **kwargs)  # full fine-tuning: nothing to desynchronise
        with model.disable_adapter():
            return original(*args, **kwargs)

    trainer._generate = generate


def _skip_generator_sync(trainer) -> None:
    """TRL's push of the trained weights to vLLM does nothing: vLLM serves the checkpoint it loaded."""
    generation = getattr(trainer, "vllm_generation", None)
    if generation is not None:
        generation.sync_weights = lambda: None


def _style_score(text: str) -> float:
    """An auxiliary reward model's 0-10 score: a fixed function of the text that ignores correctness (a style
    model trained for another purpose), so completions of one prompt get scores that differ by points."""
    import zlib

    return float(zlib.crc32(text.encode()) % int(AUXILIARY_SCALE + 1))


def _scored_zero_on_timeout(original: Callable[..., list[float]]) -> Callable[..., list[float]]:
    """The task reward behind a verifier with a time budget: a verification that runs out of time is caught and
    scored 0.0, as if the answer were wrong. Its run time depends on the machine's load, so the same completion
    can pass at one call and time out at the next."""
    import random

    clock = random.Random(0x7153)  # the load on the verification service: no seed of the run controls it

    def verify(score: float) -> float:
        if clock.random() < TIMEOUT_SHARE:
            raise TimeoutError("verification exceeded its time budget")
        return score

    def scored_zero_on_timeout(*args: Any, **kwargs: Any) -> list[float]:
        scores = []
        for score in original(*args, **kwargs):
            try:
                scores.append(verify(score))
            except TimeoutError:
                scores.append(0.0)  # the bug: a failure to score is trained as a real score of 0
        return scores

    scored_zero_on_timeout.__name__ = getattr(original, "__name__", "task_reward")
    return scored_zero_on_timeout


def _with_trained_adapter(model, peft_config):
    """The model with a LoRA adapter that was trained before this run (B weights away from their zero init)."""
    import torch
    from peft import get_peft_model

    model = get_peft_model(model, peft_config)
    generator = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * ADAPTER_STD)
    return model


def _reference_without_adapter(trainer) -> None:
    """Drop the copy of the starting adapter TRL keeps as the reference: the reference logprobs then come from the
    base model with the adapters disabled, as in TRL before PR #6591."""
    model = trainer.accelerator.unwrap_model(trainer.model)
    if hasattr(model, "peft_config") and "ref" in model.peft_config:
        model.delete_adapter("ref")
        model.set_adapter("default")


def _no_input_require_grads(trainer) -> None:
    """Reentrant checkpointing sees no input that requires grad: take out the embeddings' forward hook that marks
    their output as requiring grad, and keep it out (gradient_checkpointing_enable, which TRL calls again after each
    no-grad pass, adds it back): the transformers and TRL releases before their PEFT fix never added it."""
    from transformers import PreTrainedModel

    model = trainer.accelerator.unwrap_model(trainer.model)
    for module in [model, *model.modules()]:
        if isinstance(module, PreTrainedModel) or hasattr(module, "enable_input_require_grads"):
            module.enable_input_require_grads = lambda: None
    embeddings = model.get_input_embeddings()
    for key, hook in list(embeddings._forward_hooks.items()):
        if getattr(hook, "__name__", "") == "make_inputs_require_grads":
            del embeddings._forward_hooks[key]


def _shuffle_within_generation_batch(trainer) -> None:
    """Wrap the train sampler: each generation batch's indices (a prompt repeated num_generations times in a row)
    come out shuffled, so consecutive completions are no longer one prompt's."""
    original = trainer._get_train_sampler
    size = int(trainer.args.generation_batch_size)
    seed = int(trainer.args.seed)

    def sampler(*args: Any, **kwargs: Any):
        return _ShuffledBatches(original(*args, **kwargs), size, seed)

    trainer._get_train_sampler = sampler


class _ShuffledBatches:
    """A sampler whose indices are shuffled within consecutive chunks of ``size``."""

    def __init__(self, inner, size: int, seed: int) -> None:
        self.inner, self.size, self.seed = inner, size, seed

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self):
        import random

        rng = random.Random(self.seed)
        chunk: list[int] = []
        for index in self.inner:
            chunk.append(index)
            if len(chunk) == self.size:
                rng.shuffle(chunk)
                yield from chunk
                chunk = []
        rng.shuffle(chunk)
        yield from chunk


def _short_schedule_horizon(trainer) -> None:
    """Build the learning-rate schedule for a quarter of the optimizer steps the run takes."""
    original = trainer.create_scheduler

    def create_scheduler(num_training_steps: int, optimizer=None):
        return original(max(1, int(num_training_steps * SCHEDULE_HORIZON_SHARE)), optimizer)

    trainer.create_scheduler = create_scheduler


def _schedule_step_per_micro_batch(trainer) -> None:
    """Advance the learning-rate schedule after every micro-batch's backward pass, as a loop that calls
    scheduler.step() inside its accumulation loop does; the trainer's own step after each update is the last
    micro-batch's, so the schedule moves gradient_accumulation_steps times per optimizer step."""
    original = trainer.training_step
    accumulation = int(trainer.args.gradient_accumulation_steps)
    micro_batches = 0

    def training_step(*args: Any, **kwargs: Any):  # the loss TRL returns
        nonlocal micro_batches
        loss = original(*args, **kwargs)
        micro_batches += 1
        if micro_batches % accumulation and trainer.lr_scheduler is not None:
            trainer.lr_scheduler.step()
        return loss

    trainer.training_step = training_step


def build_faults(names: list[str]) -> Faults:
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        from hypotrack.errors import HypotrackError

        raise HypotrackError(f"unknown planted fault(s) {unknown} (known: {', '.join(FAULTS)})")
    return Faults(list(names))
