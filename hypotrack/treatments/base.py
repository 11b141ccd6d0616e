"""The contract of a treatment that acts inside the trainer: the fix a hypothesis's treatment arm trains with.

Most treatments are settings (a KL coefficient, a learning rate, a prompt budget) that the runner puts in the
treatment arm's config (definitions/run_settings.py). The ones here act on the trainer itself, so they reach
hypotrack's own arms and a user's script (a command experiment) alike, without a flag of the script's.

A treatment describes itself on its class: its ``name`` (the key in a hypothesis's `treatment:` and the flag
``--<name>`` of `hypotrack run`), the hypothesis whose cause it ``fixes``, the flag's ``help``, the ``seams``
it touches (faults/base.py SEAMS) and its ``Settings`` (a dataclass: one field per knob, with a docstring under
it). It overrides the stages it acts at, each called for the treatment arm only:

- `reward_functions(functions)`: the experiment's reward functions;
- `attach(trainer)`: the built trainer, after any planted fault (a treatment undoes its cause whatever planted
  it).

treatments/manifest.py reads the catalogue off the classes without importing torch, so a treatment module
imports torch inside its methods.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from hypotrack import units


@dataclass(frozen=True)
class NoSettings:
    """A treatment without settings."""


class Treatment:
    """Base class: declare what the treatment fixes and how, override the stages it acts at."""

    name: ClassVar[str] = ""
    fixes: ClassVar[str] = ""  # the hypothesis id whose cause this treatment undoes
    help: ClassVar[str] = ""  # the help of its `hypotrack run` flag
    seams: ClassVar[tuple[str, ...]] = ()
    Settings: ClassVar[type] = NoSettings

    def __init__(self, **settings: Any) -> None:
        self.config = units.settings_of("treatment", self.name, self.Settings, settings)

    @classmethod
    def setting_defaults(cls) -> dict[str, Any]:
        return units.setting_defaults(cls.Settings)

    @classmethod
    def setting_docs(cls) -> dict[str, str]:
        return units.setting_docs(cls.Settings)

    def reward_functions(self, functions: list[Callable[..., Any]]) -> list[Callable[..., Any]]:
        return functions

    def attach(self, trainer: Any) -> None:
        """Act on the built trainer (wrap its seams through session/trl_seams.py)."""
