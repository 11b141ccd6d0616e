"""Diagnostics hooks, one module per hook. No torch at import time: classes load lazily by name."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from hypotrack.hooks.manifest import HOOK_DESCRIPTIONS, HOOK_METRICS, HOOK_SETTING_DEFAULTS, HOOK_SETTINGS

if TYPE_CHECKING:
    from hypotrack.hooks.base import DiagnosticHook

_CLASSES = {
    "advantages": ("hypotrack.hooks.advantages", "AdvantagesHook"),
    "token_masking": ("hypotrack.hooks.token_masking", "TokenMaskingHook"),
    "kl": ("hypotrack.hooks.kl", "KLHook"),
    "truncation": ("hypotrack.hooks.truncation", "TruncationHook"),
    "reward_signal": ("hypotrack.hooks.reward_signal", "RewardSignalHook"),
    "lora_sync": ("hypotrack.hooks.lora_sync", "LoraSyncHook"),
    "weights": ("hypotrack.hooks.weights", "WeightsHook"),
    "zero_variance": ("hypotrack.hooks.zero_variance", "ZeroVarianceHook"),
    "completion_length": ("hypotrack.hooks.completion_length", "CompletionLengthHook"),
    "reward_check": ("hypotrack.hooks.reward_check", "RewardCheckHook"),
    "sampling_parity": ("hypotrack.hooks.sampling_parity", "SamplingParityHook"),
    "diversity": ("hypotrack.hooks.diversity", "DiversityHook"),
}
ALL_HOOKS: tuple[str, ...] = tuple(_CLASSES)

__all__ = ["ALL_HOOKS", "HOOK_DESCRIPTIONS", "HOOK_METRICS", "HOOK_SETTINGS", "HOOK_SETTING_DEFAULTS", "get_hook_class", "build_hook"]


def get_hook_class(name: str) -> type["DiagnosticHook"]:
    """The hook class for `name` (imports its module, and torch, on first use)."""
    try:
        module, cls = _CLASSES[name]
    except KeyError:
        raise ValueError(f"unknown diagnostics hook {name!r}; known hooks: {', '.join(ALL_HOOKS)}") from None
    return getattr(importlib.import_module(module), cls)


def build_hook(name: str, **settings) -> "DiagnosticHook":
    """Instantiate hook `name`, rejecting settings it does not accept."""
    unknown = set(settings) - set(HOOK_SETTINGS[name]) if name in HOOK_SETTINGS else set()
    if unknown:
        raise ValueError(
            f"hook {name!r} does not accept setting(s) {sorted(unknown)}; accepted: {sorted(HOOK_SETTINGS[name])}"
        )
    return get_hook_class(name)(**settings)
