"""Small tensor helpers shared by the hooks (imported lazily: this module imports torch)."""
from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import torch

_LAYER_RE = re.compile(r"(?:^|\.)(?:layers|h|layer|blocks)\.(\d+)\.")


def f(x: Any) -> float:
    """A finite Python float (NaN/inf become 0.0: the trainer logs floats that must average cleanly)."""
    v = float(x.item() if isinstance(x, torch.Tensor) else x)
    return v if math.isfinite(v) else 0.0


def masked_mean(x: torch.Tensor, mask: torch.Tensor) -> float:
    m = mask.to(x.dtype)
    return f((x * m).sum() / m.sum().clamp(min=1.0))


def masked_max(x: torch.Tensor, mask: torch.Tensor) -> float:
    m = mask.bool()
    return f(x[m].max()) if m.any() else 0.0


def loss_bearing_mask(batch: Any) -> torch.Tensor:
    """The completion tokens the loss reads, as 0/1 floats: TRL's completion mask, less the tool outputs its
    tool mask takes out of the loss."""
    mask = batch.completion_mask.detach().float()
    if batch.tool_mask is not None:
        mask = mask * batch.tool_mask.detach().float().to(mask.device)
    return mask


def sampling_log_ratio(batch: Any) -> torch.Tensor | None:
    """The trainer's logprob less the generator's (TRL's `old_per_token_logps - sampling_per_token_logps`, the
    log of each token's importance weight) at every position; None where the generator reported no logprobs
    (Hugging Face generation). Read it under `loss_bearing_mask`."""
    if batch.sampling_per_token_logps is None or batch.old_per_token_logps is None:
        return None
    old = batch.old_per_token_logps.detach().float()
    return old - batch.sampling_per_token_logps.detach().float().to(old.device)


def sampling_gap(batch: Any) -> torch.Tensor | None:
    """|trainer logprob - generator logprob| of every loss-bearing token, flat (empty where none bears the
    loss); None where the generator reported no logprobs."""
    ratio = sampling_log_ratio(batch)
    if ratio is None:
        return None
    return ratio.abs()[loss_bearing_mask(batch).to(ratio.device).bool()]


def layer_of(name: str) -> str:
    """'layer_<i>' for parameters inside a numbered block, 'embed' for embeddings/lm head, else 'other'."""
    m = _LAYER_RE.search(name)
    if m:
        return f"layer_{int(m.group(1))}"
    if "embed" in name or "lm_head" in name or "wte" in name:
        return "embed"
    return "other"


def unwrap(model: Any) -> Any:
    """The module underneath DDP/accelerate wrappers (`.module`)."""
    while hasattr(model, "module") and isinstance(model.module, torch.nn.Module):
        model = model.module
    return model


def lora_layers(model: Any) -> Iterator[tuple[str, Any]]:
    """(name, peft LoraLayer) pairs: modules with lora_A/lora_B ModuleDicts."""
    for name, mod in unwrap(model).named_modules():
        if isinstance(getattr(mod, "lora_A", None), torch.nn.ModuleDict) and isinstance(
            getattr(mod, "lora_B", None), torch.nn.ModuleDict
        ):
            yield name, mod


def policy_adapters(model: Any) -> set[str] | None:
    """The names of the adapters the policy runs with (PEFT's active adapters), None when the model does not say.

    A PeftModel passed to TRL with beta > 0 also holds TRL's frozen copy of the starting adapter, "ref", which
    only the reference pass switches on: it is the reference, not an adapter of the policy."""
    names = getattr(unwrap(model), "active_adapters", None)
    if callable(names):  # transformers' PEFT integration has it as a method
        try:
            names = names()
        except ValueError:  # no adapter loaded
            return None
    if isinstance(names, str):
        return {names}
    return set(names) if names else None


def is_peft(model: Any) -> bool:
    return hasattr(unwrap(model), "disable_adapter") and next(lora_layers(model), None) is not None


@torch.no_grad()
def completion_logps(model: Any, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, completion_ids: torch.Tensor,
                     completion_mask: torch.Tensor, trainer: Any = None, temperature: float = 1.0) -> torch.Tensor:
    """`grpo_math.completion_logps` without gradients: the hooks only read logprobs."""
    from hypotrack.grpo_math import completion_logps as logps

    return logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature, trainer)


def attention_through_last(mask: torch.Tensor) -> torch.Tensor:
    """An attention mask over the completion up to its last loss-bearing token (later tokens cannot change the
    logprobs of the ones scored), for re-scoring a batch's completions outside the loss."""
    pos = torch.arange(mask.size(1), device=mask.device).expand_as(mask)
    last = torch.where(mask.bool(), pos, torch.full_like(pos, -1)).max(dim=1, keepdim=True).values
    return (pos <= last).long()


def reference_pass(model: Any, ref_model: Any) -> tuple[Any, Any] | None:
    """(the module to score with, the context to score in) for the reference TRL's KL term uses; None without one.

    A separate reference model as it is; under PEFT, the model with TRL's reference adapter on (its copy of the
    starting adapter, "ref") or, without that copy, with the adapters off, as TRL's own reference pass does."""
    import contextlib

    if ref_model is not None:
        return ref_model, contextlib.nullcontext()
    if model is None or not is_peft(model):
        return None
    base = unwrap(model)
    if "ref" not in getattr(base, "peft_config", {}):
        return model, base.disable_adapter()
    from trl.trainer.utils import use_adapter  # TRL's own switch to its reference adapter (and back)

    return model, use_adapter(base, adapter_name="ref")


class eval_mode:
    """Context manager: module.eval() inside (no dropout in diagnostic forwards), restores train()."""

    def __init__(self, module: Any) -> None:
        self.module = module

    def __enter__(self):
        self.was_training = bool(getattr(self.module, "training", False))
        if self.was_training:
            self.module.eval()
        return self.module

    def __exit__(self, *exc):
        if self.was_training:
            self.module.train()
        return False


# The decoding cache's keyword: transformers 5.x renamed ``past_key_values`` to ``cache`` (and dropped
# ``cache_position``); a model's forward receives whichever its version passes.
_CACHE_KWARGS = ("cache", "past_key_values")


def _decoding_cache(kwargs: dict) -> Any:
    return next((kwargs[k] for k in _CACHE_KWARGS if kwargs.get(k) is not None), None)


def is_generate_forward(kwargs: dict) -> bool:
    """A decoding forward of `generate` (not the training or scoring pass): no grad, no labels, cache arguments."""
    return (not torch.is_grad_enabled() and "labels" not in kwargs
            and any(k in kwargs for k in (*_CACHE_KWARGS, "cache_position", "use_cache")))


def is_prefill(ids: torch.Tensor, kwargs: dict, last_width: int | None) -> bool:
    """Whether this generate forward starts a new call (the prompt) rather than decoding one more token.

    ``last_width`` is the input width of the previous generate forward, for a model called without a cache.
    """
    past = _decoding_cache(kwargs)
    if past is not None and hasattr(past, "get_seq_length"):
        return int(past.get_seq_length()) == 0
    position = kwargs.get("cache_position")
    if position is not None:
        return int(position.reshape(-1)[0]) == 0
    return last_width is None or ids.size(1) != last_width + 1  # no cache: the input grows by one token a step


def some_group_varies(batch: Any) -> bool:
    """Whether any group of num_generations completions got rewards that differ (weighted sum, NaN as 0)."""
    rewards = (torch.nan_to_num(batch.rewards_per_func.float()) * batch.reward_weights.to(
        batch.rewards_per_func.device).float()).sum(dim=1)
    size = batch.num_generations
    if rewards.numel() < size or rewards.numel() % size:
        return bool(rewards.numel() > 1 and rewards.std() > 1e-8)
    return bool((rewards.view(-1, size).std(dim=1) > 1e-8).any())


def trained_parameters(ctx: Any) -> list:
    """The weights that train: those the optimizer updates (its parameter groups) that require grad, else the
    model's trainable ones.

    The two can part: PEFT's set_adapter marks the active adapter trainable again whenever TRL switches back
    from its reference adapter, so weights the user froze require grad while the optimizer, built before,
    never updates them; a gradient only trains what the optimizer holds. An optimizer that holds none of the
    weights that require grad (built before the adapters existed, h25) says nothing of where the backward pass
    reaches: the model's trainable weights are read then."""
    optimizer = getattr(getattr(ctx, "trainer", None), "optimizer", None)
    groups = getattr(optimizer, "param_groups", None) or []
    held = [p for group in groups for p in group["params"] if p.requires_grad]
    return held or [p for p in unwrap(ctx.model).parameters() if p.requires_grad]


def optimizer_coverage(ctx: Any) -> tuple[float, list]:
    """(the share of the trainable weights, by element count, that the optimizer does not hold; the trainable
    tensors themselves). 0 where there is no optimizer to read."""
    optimizer = getattr(getattr(ctx, "trainer", None), "optimizer", None)
    groups = getattr(optimizer, "param_groups", None)
    trainable = [p for p in unwrap(ctx.model).parameters() if p.requires_grad]
    if not groups or not trainable:
        return 0.0, trainable
    held = {id(p) for group in groups for p in group["params"]}
    outside = sum(p.numel() for p in trainable if id(p) not in held)
    return outside / sum(p.numel() for p in trainable), trainable


def fingerprints(params: list) -> Any:
    """One float64 per tensor that any change of its values changes (the sum of its values and of their squares,
    each weighted by a fixed pattern so that a change and its negation elsewhere do not cancel)."""
    import torch

    out = []
    for p in params:
        flat = p.detach().reshape(-1).double()
        pattern = torch.arange(1, flat.numel() + 1, device=flat.device, dtype=torch.float64).remainder(7).add(1)
        out.append(torch.stack([(flat * pattern).sum(), (flat * flat).sum()]))
    return torch.stack(out).cpu() if out else torch.empty(0, 2, dtype=torch.float64)


def unmoved_share(params: list, before: Any) -> float:
    """The share, by element count, of ``params`` (tensors that had a gradient) whose values did not change since
    ``before`` (their `fingerprints`)."""
    import torch

    if not params:
        return 0.0
    same = (fingerprints(params) == before).all(dim=1)
    sizes = torch.tensor([p.numel() for p in params], dtype=torch.float64)
    return float(sizes[same].sum() / sizes.sum())


def with_gradient(params: list) -> list:
    """The tensors among ``params`` whose gradient is there and not all zero (what an optimizer step moves)."""
    return [p for p in params if p.grad is not None and bool(p.grad.detach().abs().amax() > 0)]


def gradient_reach(params: list) -> tuple[float, float]:
    """(share of the trainable weights, by element count, the backward pass gave no gradient tensor; the norm of
    all their gradients together). All of them count as unreached when every gradient is 0."""
    import torch

    with_grad = [p for p in params if p.grad is not None]
    norms = torch._foreach_norm([p.grad.detach() for p in with_grad]) if with_grad else []
    norm = float(torch.linalg.vector_norm(torch.stack(norms))) if with_grad else 0.0
    reached = sum(p.numel() for p in with_grad) if norm > 0.0 else 0
    total = sum(p.numel() for p in params)
    return (1.0 - reached / total if total else 0.0), norm
