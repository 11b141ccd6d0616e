"""The two command lines of a command experiment: the user's command as written (control) and with the
hypothesis's treatment mapped onto the script's own flags (treatment).

Control is the command plus what the test itself decides (the seed, the number of steps) and the setup
flags the user gave; treatment adds every treatment change, each through its `command.treatments`
mapping. A change without a mapping cannot reach the script, so the test is refused, naming the key and
the experiment, before anything is recorded.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypotrack.definitions.command import CommandSpec, render
from hypotrack.definitions.models import Experiment, Hypothesis, Overrides
from hypotrack.definitions.run_settings import SETTINGS_BY_NAME, SETUP_SETTINGS, TREATMENT_SETTINGS
from hypotrack.errors import HypotrackError
from hypotrack.run.arms import ARM_OUTPUT

TREATMENT_KEYS = (*TREATMENT_SETTINGS, "set", "rewards")


@dataclass
class CommandLine:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""

    def shown(self) -> str:
        """The line as a shell would take it, its environment first."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (env + " " if env else "") + shlex.join(self.argv)


def command_lines(hypothesis: Hypothesis, experiment: Experiment, experiment_path: Path, cli: Overrides,
                  resolved: dict[str, dict[str, Any]], seed: int,
                  arms: tuple[str, ...] = ("control", "treatment")) -> dict[str, CommandLine]:
    """arm -> its command line for one seed, for the arms asked; raises HypotrackError for a change the script
    cannot take."""
    command = experiment.command
    assert command is not None
    where = f"experiment {experiment.name!r} ({experiment_path})"
    setup = _changes(cli, SETUP_SETTINGS)
    setup.pop("max_steps", None)  # reaches the script through command.max_steps, as the test's own count
    from_cli = {**setup, **_changes(cli, TREATMENT_KEYS)}
    treatment = {**setup, **_changes(hypothesis.treatment, None), **_changes(cli, TREATMENT_KEYS)}
    base = _base(command, experiment_path, seed, resolved["control"]["max_steps"])
    out = {}
    for arm, changes in (("control", setup), ("treatment", treatment)):
        if arm not in arms:
            continue
        line = CommandLine(list(base.argv), dict(base.env), base.cwd)
        for key, value in changes.items():
            # who asked for the change: a flag the user typed, or the hypothesis's own treatment
            typed = key in from_cli and from_cli[key] == value
            asked_by = _flag(key) if typed else f"hypothesis {hypothesis.id}'s treatment"
            _map(line, command, experiment, key, value, resolved[arm], where, asked_by)
        out[arm] = line
    return out


def _flag(key: str) -> str:
    setting = SETTINGS_BY_NAME.get(key)
    return f"the flag {setting.flag_name}" if setting is not None else f"the flag --{key.replace('_', '-')}"


def _changes(overrides: Overrides, names: tuple[str, ...] | None) -> dict[str, Any]:
    return {k: v for k, v in overrides.model_dump(exclude_defaults=True).items() if names is None or k in names}


def _base(command: CommandSpec, experiment_path: Path, seed: int, max_steps: int) -> CommandLine:
    cwd = (experiment_path.parent / (command.cwd or ".")).resolve()
    line = CommandLine(shlex.split(command.run), dict(command.env), str(cwd))
    for mapping, value in ((command.seed, seed), (command.max_steps, max_steps), (command.output_dir, ARM_OUTPUT)):
        if mapping is not None:
            args, env = render(mapping, value)
            line.argv += args
            line.env.update(env)
    return line


def _map(line: CommandLine, command: CommandSpec, experiment: Experiment, key: str, value: Any,
         arm: dict[str, Any], where: str, asked_by: str) -> None:
    if key == "set":
        for field_name, field_value in value.items():
            mapping = (command.treatments.get("set") or {}).get(field_name)
            _apply(line, mapping, field_value, None, f"set.{field_name}", where, asked_by)
        return
    if key in SETTINGS_BY_NAME and SETTINGS_BY_NAME[key].inside_trainer:
        return  # hypotrack does it inside the script's trainer (worker/repairs.py): no flag of the script's
    if key == "rewards":
        raise HypotrackError(f"{where}: {asked_by} replaces the reward functions, which a command experiment cannot "
                             "do from outside its script")
    mapping = command.treatments.get(key)
    factor = None
    shown = value
    if key.endswith("_factor"):
        base_key = SETTINGS_BY_NAME[key].lands.split(".", 1)[1]
        if base_key not in experiment.settings:
            raise HypotrackError(f"{where}: {asked_by} multiplies {base_key} by {value}; declare the value the "
                                 f"command runs with as settings.{base_key} so the factor has a base")
        factor, shown = value, arm["grpo"][base_key]
    _apply(line, mapping, shown, factor, key, where, asked_by)


def _apply(line: CommandLine, mapping: Any, value: Any, factor: Any, key: str, where: str, asked_by: str) -> None:
    if mapping is None:
        top = key.split(".", 1)
        example = (f"set: {{{top[1]}: \"--your-flag {{value}}\"}}" if len(top) == 2
                   else f"{key}: \"--your-flag {{value}}\"")
        drop = f", or leave {asked_by[len('the flag '):]} out" if asked_by.startswith("the flag ") else ""
        raise HypotrackError(f"{where}: {asked_by} sets {key} = {value!r}, and command.treatments has no mapping "
                             f"for {key}, so your script cannot receive it; add `{example}` under "
                             f"command.treatments{drop}")
    rendered = render(mapping, value, factor)
    if rendered is None:
        raise HypotrackError(f"{where}: command.treatments.{key} maps {', '.join(map(str, mapping))} but {asked_by} "
                             f"sets {key} = {value!r}: add that value to the mapping")
    args, env = rendered
    line.argv += args
    line.env.update(env)
