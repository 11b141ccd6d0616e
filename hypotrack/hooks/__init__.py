"""Diagnostics hooks, one module per hook, each describing itself (hooks/base.py). No torch at import time."""
from __future__ import annotations

from typing import TYPE_CHECKING

from hypotrack.hooks.manifest import HOOK_CLASSES, HOOK_DESCRIPTIONS, HOOK_METRICS, HOOK_SETTING_DEFAULTS, HOOK_SETTINGS

if TYPE_CHECKING:
    from hypotrack.hooks.base import DiagnosticHook

ALL_HOOKS: tuple[str, ...] = tuple(HOOK_CLASSES)

__all__ = ["ALL_HOOKS", "HOOK_DESCRIPTIONS", "HOOK_METRICS", "HOOK_SETTINGS", "HOOK_SETTING_DEFAULTS", "get_hook_class",
           "build_hook", "build_hooks"]


def get_hook_class(name: str) -> type["DiagnosticHook"]:
    try:
        return HOOK_CLASSES[name]
    except KeyError:
        raise ValueError(f"unknown diagnostics hook {name!r}; known hooks: {', '.join(ALL_HOOKS)}") from None


def build_hook(name: str, **settings) -> "DiagnosticHook":
    """Instantiate hook `name`, rejecting settings it does not accept (ValueError)."""
    return get_hook_class(name)(**settings)


def build_hooks(names, settings: dict[str, dict] | None = None) -> list["DiagnosticHook"]:
    """The hooks ``names`` (in that order), each with its entry of ``settings``."""
    return [build_hook(name, **(settings or {}).get(name, {})) for name in names]
