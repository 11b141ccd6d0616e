"""What each diagnostics hook emits and accepts, read off the hook classes, without importing torch.

Each hook module declares its hook on the class (hooks/base.py: name, description, metrics, Settings)
and imports torch only inside its methods, so this module can import every module of the package and
collect the hooks it finds: adding a hook is adding its module. The spec loader and the fast CLI use
the tables below to reject unknown hook names, metric names and settings at load time.

Metric names are the short names a hook returns; they are logged as ``diag/<hook>/<name>``.
``{func}`` stands for a reward function name, ``{a}``/``{b}`` for a pair of them (a before b in the
experiment's reward function order). Not every key appears at every step: the "every N steps" checks
report on their steps only, and a few keys are emitted only when they are defined (see each module).
"""
from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import typing
from pathlib import Path

from hypotrack.hooks.base import DiagnosticHook


def _discover() -> dict[str, type[DiagnosticHook]]:
    """Every named DiagnosticHook subclass defined in a public module of hypotrack/hooks/, by name."""
    found: dict[str, type[DiagnosticHook]] = {}
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda i: i.name):
        if info.name.startswith("_") or info.name == "manifest":
            continue
        module = importlib.import_module(f"hypotrack.hooks.{info.name}")
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, DiagnosticHook) and value.name
                    and value.__module__ == module.__name__):
                if value.name in found:
                    raise RuntimeError(f"two diagnostics hooks are named {value.name!r}: "
                                       f"{found[value.name].__module__} and {module.__name__}")
                found[value.name] = value
    return found


def _setting_type(hook: type[DiagnosticHook], field: dataclasses.Field) -> type:
    """The setting's type, None left out (a None default is allowed for a setting declared `X | None`)."""
    hint = typing.get_type_hints(hook.Settings)[field.name]
    options = [t for t in typing.get_args(hint) if t is not type(None)] or [hint]
    return options[0]


HOOK_CLASSES: dict[str, type[DiagnosticHook]] = _discover()
HOOK_METRICS: dict[str, list[str]] = {name: list(cls.metrics) for name, cls in HOOK_CLASSES.items()}
HOOK_DESCRIPTIONS: dict[str, str] = {name: cls.description for name, cls in HOOK_CLASSES.items()}
# Settings each hook accepts: name -> type.
HOOK_SETTINGS: dict[str, dict[str, type]] = {
    name: {f.name: _setting_type(cls, f) for f in dataclasses.fields(cls.Settings)}
    for name, cls in HOOK_CLASSES.items()
}
# Their defaults (the values the Settings dataclasses declare).
HOOK_SETTING_DEFAULTS: dict[str, dict[str, object]] = {name: cls.setting_defaults()
                                                       for name, cls in HOOK_CLASSES.items()}
