"""Small tensor helpers shared by the hooks (imported lazily: this module imports torch)."""
from __future__ import annotations

import math
import re
from typing import Any, Iterator

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


def nanstd(t: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """TRL's `nanstd` (Bessel-corrected, NaN-aware), copied so the hooks do not depend on trl internals."""
    mean = torch.nanmean(t, dim=dim, keepdim=True)
    var = torch.nanmean((t - mean) ** 2, dim=dim, keepdim=True)
    count = torch.sum(~torch.isnan(t), dim=dim, keepdim=True)
    corr = torch.where(count > 1, count / (count - 1), torch.full_like(var, float("nan")))
    std = torch.sqrt(var * corr)
    if keepdim:
        return std
    return std.squeeze(dim) if dim is not None else std.reshape(())


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
    while hasattr(model, "module") and isinstance(getattr(model, "module"), torch.nn.Module):
        model = model.module
    return model


def lora_layers(model: Any) -> Iterator[tuple[str, Any]]:
    """(name, peft LoraLayer) pairs: modules with lora_A/lora_B ModuleDicts."""
    for name, mod in unwrap(model).named_modules():
        if isinstance(getattr(mod, "lora_A", None), torch.nn.ModuleDict) and isinstance(
            getattr(mod, "lora_B", None), torch.nn.ModuleDict
        ):
            yield name, mod


def is_peft(model: Any) -> bool:
    return hasattr(unwrap(model), "disable_adapter") and next(lora_layers(model), None) is not None


@torch.no_grad()
def completion_logps(
    model: Any,
    prompt_ids: torch.Tensor,
    prompt_mask: torch.Tensor,
    completion_ids: torch.Tensor,
    completion_mask: torch.Tensor,
    trainer: Any = None,
    temperature: float = 1.0,
) -> torch.Tensor:
    """Per-token logprobs of the completion tokens, the way TRL computes them.

    Uses the trainer's own `_get_per_token_logps_and_entropies` when a trainer is given (same temperature,
    same fused head, same numerics as the values being checked); otherwise a plain forward with
    logits / temperature.
    """
    input_ids = torch.cat([prompt_ids, completion_ids], dim=1)
    attn = torch.cat([prompt_mask, completion_mask], dim=1)
    k = completion_ids.size(1)
    if trainer is not None and hasattr(trainer, "_get_per_token_logps_and_entropies"):
        logps, _, _ = trainer._get_per_token_logps_and_entropies(model, input_ids, attn, k)
        return logps.float()
    logits = model(input_ids=input_ids, attention_mask=attn).logits[:, -k - 1 : -1, :].float() / temperature
    return torch.log_softmax(logits, dim=-1).gather(-1, completion_ids.unsqueeze(-1)).squeeze(-1)


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
