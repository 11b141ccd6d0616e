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
from pathlib import Path

from hypotrack import units
from hypotrack.hooks.base import DiagnosticHook

HOOK_CLASSES: dict[str, type[DiagnosticHook]] = units.discover("hypotrack.hooks", Path(__file__).parent, DiagnosticHook,
                                                               "diagnostics hook")
HOOK_METRICS: dict[str, list[str]] = {name: list(cls.metrics) for name, cls in HOOK_CLASSES.items()}
HOOK_DESCRIPTIONS: dict[str, str] = {name: cls.description for name, cls in HOOK_CLASSES.items()}
# The experiment's declarations each hook reads (hooks/base.py `reads`).
HOOK_READS: dict[str, tuple[str, ...]] = {name: cls.reads for name, cls in HOOK_CLASSES.items() if cls.reads}
# Settings each hook accepts: name -> type.
HOOK_SETTINGS: dict[str, dict[str, type]] = {
    name: {f.name: units.setting_type(cls.Settings, f) for f in dataclasses.fields(cls.Settings)}
    for name, cls in HOOK_CLASSES.items()
}
# Their defaults (the values the Settings dataclasses declare).
HOOK_SETTING_DEFAULTS: dict[str, dict[str, object]] = {name: cls.setting_defaults()
                                                       for name, cls in HOOK_CLASSES.items()}
