"""A command experiment: the user's own training command, and how hypotrack's settings map onto it.

```yaml
name: my_script
command:
  run: python train.py --lr 1e-6 --beta 0.04      # the control arm: the command as written
  seed: --seed {value}                          # how --seeds reaches the script
  max_steps: --max-steps {value}                # how --max-steps (and the experiment's max_steps) reaches it
  treatments:                                   # hypotrack's treatment keys -> the script's flags
    kl_beta: --beta {value}
    scale_rewards: --scale-rewards {value}
    peft: {false: --no-peft}                    # per value
    learning_rate_factor: --lr {value}          # {value}: the resolved rate (needs settings.learning_rate)
    set: {max_completion_length: --max-new-tokens {value}}
  reward_functions: [exact_answer, brevity]     # the names the script's GRPOTrainer logs its rewards under
task_reward: exact_answer
settings: {beta: 0.04, learning_rate: 1.0e-6}   # what the command runs with: requirements and factors read it
```

A mapping is a flag template (``--beta {value}``, split like a shell line after formatting), a
table from value to template (``{false: --no-peft}``; a value missing from it cannot be applied), or
``{env: NAME}`` (the value goes to an environment variable). ``{value}`` is the setting's value in
the arm (a factor's product where the base is declared), ``{factor}`` the factor itself.
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

Mapping = str | dict[Any, str]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True, allow_inf_nan=False)


class CommandSpec(_Strict):
    """The user's training command and how hypotrack's settings reach it."""

    run: str = Field(min_length=1, description="The training command as the user runs it: the control arm.")
    cwd: str | None = Field(None, description="Folder the command runs in (relative to the experiment file); "
                            "default: the experiment file's folder.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment variables both arms get.")
    seed: Mapping | None = Field(None, description="How a seed reaches the script: a flag template such as "
                                 "'--seed {value}', or {env: NAME}. Without it every seed runs the same command.")
    max_steps: Mapping | None = Field(None, description="How the number of training steps reaches the script "
                                      "('--max-steps {value}' or {env: NAME}); without it the script's own count.")
    output_dir: Mapping | None = Field(None, description="How an arm's own output folder reaches the script "
                                       "('--output-dir {value}'), so arms running side by side do not write over "
                                       "each other; without it the script's own folder.")
    treatments: dict[str, Any] = Field(default_factory=dict, description="hypotrack's treatment keys (kl_beta, "
                                       "scale_rewards, peft, learning_rate_factor, max_prompt_length, "
                                       "task_reward_only, ...; set: {GRPOConfig field: mapping}) -> the script's "
                                       "flags or environment variables.")
    reference_column: str | None = Field(None, description="The column of the script's dataset holding each "
                                         "row's correct answer (the reward check, h13 and h11, scores it); undeclared, the task "
                                         "reward's own argument that is a column, and the verdict says so.")
    reward_functions: list[str] = Field(default_factory=list, description="The names the script's reward "
                                        "functions are logged under (TRL's rewards/<name>/mean), task reward "
                                        "first unless task_reward names another.")

    @field_validator("run")
    @classmethod
    def _splits(cls, value: str) -> str:
        try:
            shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"the command does not split like a shell line: {exc}") from None
        return value

    @field_validator("seed", "max_steps", "output_dir")
    @classmethod
    def _a_mapping(cls, value: Mapping | None) -> Mapping | None:
        if value is not None:
            check_mapping(value)
        return value

    @field_validator("treatments")
    @classmethod
    def _mappings(cls, value: dict[str, Any]) -> dict[str, Any]:
        from .run_settings import SETTINGS_BY_NAME

        for key, mapping in value.items():
            if key == "set":
                if not isinstance(mapping, dict):
                    raise ValueError("treatments.set maps GRPOConfig fields to flags: {field: '--flag {value}'}")
                for field, inner in mapping.items():
                    check_mapping(inner, f"set.{field}")
            elif key not in SETTINGS_BY_NAME:
                raise ValueError(f"unknown treatment key {key!r} (known: {', '.join(sorted(SETTINGS_BY_NAME))}, set)")
            else:
                check_mapping(mapping, key)
        return value


def check_mapping(mapping: Any, key: str = "") -> None:
    where = f"{key}: " if key else ""
    if isinstance(mapping, str):
        _template_fields(mapping, where)
        return
    if isinstance(mapping, dict) and mapping:
        if set(mapping) == {"env"}:
            if not isinstance(mapping["env"], str) or not mapping["env"].isidentifier():
                raise ValueError(f"{where}env: needs the name of an environment variable")
            return
        for template in mapping.values():
            if not isinstance(template, str):
                raise ValueError(f"{where}each value maps to a flag string (got {template!r})")
            _template_fields(template, where)
        return
    raise ValueError(f"{where}a mapping is a flag template ('--flag {{value}}'), a table {{value: '--flag'}}, "
                     f"or {{env: NAME}} (got {mapping!r})")


def _template_fields(template: str, where: str) -> None:
    import string

    for _, field, _, _ in string.Formatter().parse(template):
        if field not in (None, "value", "factor"):
            raise ValueError(f"{where}unknown placeholder {{{field}}} in {template!r} (use {{value}} or {{factor}})")


def render(mapping: Mapping, value: Any, factor: Any = None) -> tuple[list[str], dict[str, str]] | None:
    """(arguments to append, environment to set) for one setting's value; None when a value table lacks it."""
    if isinstance(mapping, dict) and set(mapping) == {"env"}:
        return [], {mapping["env"]: _text(value)}
    if isinstance(mapping, dict):
        template = next((t for v, t in mapping.items() if _same(v, value)), None)
        if template is None:
            return None
    else:
        template = mapping
    return shlex.split(template.format(value=_text(value), factor=_text(factor))), {}


def _same(key: Any, value: Any) -> bool:
    if isinstance(value, bool) or isinstance(key, bool):
        return str(key).lower() == str(value).lower()
    return key == value or str(key) == str(value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return "" if value is None else str(value)
