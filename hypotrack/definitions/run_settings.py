"""Every setting a `hypotrack run` flag or a hypothesis's `treatment:` can change, declared once.

A `RunSetting` says its name (the `treatment:` key and the flag, `--kl-beta` for
`kl_beta`), type, help, where it lands in a resolved arm (`grpo.beta`) and whom it
changes: `setup` settings describe the run being debugged and apply to both arms,
`treatment` settings change the treatment arm only. The click options of
`hypotrack run`, the pydantic `Overrides` model of a hypothesis's treatment, the
flag-to-config mapping and the `hypotrack run ...` line that `next` prints are
all derived from `RUN_SETTINGS`; adding a flag is adding one entry here, or, for a treatment that acts
inside the trainer, adding its class (hypotrack/treatments/).

`VALUE_BOUNDS` holds the bounds of a config value by where it lands, so the same
bound holds whichever way a value arrives: a flag, `--set`, the experiment's
`settings:`/`lora:`/`data:`, or a hypothesis's treatment. Every number must also
be finite.

No pydantic, click or YAML here: the read-only commands import this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .vocabulary import GENERATOR_DTYPES, LOSS_TYPES, SCALE_REWARDS

_COMPARE = {"ge": lambda v, limit: v >= limit, "gt": lambda v, limit: v > limit,
            "le": lambda v, limit: v <= limit, "lt": lambda v, limit: v < limit}


@dataclass(frozen=True)
class Bounds:
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def problem(self, value: Any) -> str | None:
        """None when ``value`` is within bounds, else what is wrong with it."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None  # type errors are reported by the type check
        if not math.isfinite(value):
            return f"must be a finite number (got {value!r})"
        for name, word in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            limit = getattr(self, name)
            if limit is not None and not _COMPARE[name](value, limit):
                return f"must be {word} {limit:g} (got {value!r})"
        return None

    def pydantic(self) -> dict[str, float]:
        """The same bounds as pydantic Field keyword arguments."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


# Bounds by where a value lands in a resolved arm. Keys are "grpo.<GRPOConfig field>",
# "lora.<LoraConfig field>", "data.<field>" or a top-level arm key.
VALUE_BOUNDS: dict[str, Bounds] = {
    "max_steps": Bounds(ge=1),
    "grpo.learning_rate": Bounds(gt=0),
    "grpo.learning_rate*": Bounds(gt=0),  # learning_rate_factor
    "grpo.num_generations*": Bounds(ge=1),  # num_generations_factor
    "grpo.max_completion_length*": Bounds(gt=0),  # max_completion_length_factor
    "grpo.beta": Bounds(ge=0),
    "grpo.per_device_train_batch_size": Bounds(ge=1),
    "grpo.num_generations": Bounds(ge=2),
    "grpo.num_generations_eval": Bounds(ge=1),
    "grpo.generation_batch_size": Bounds(ge=1),
    "grpo.steps_per_generation": Bounds(ge=1),
    "grpo.gradient_accumulation_steps": Bounds(ge=1),
    "grpo.logging_steps": Bounds(gt=0),
    "grpo.max_completion_length": Bounds(ge=1),
    "grpo.temperature": Bounds(gt=0),
    "grpo.top_p": Bounds(gt=0, le=1),
    "grpo.top_k": Bounds(ge=0),
    "grpo.min_p": Bounds(ge=0, le=1),
    "grpo.repetition_penalty": Bounds(gt=0),
    "grpo.num_iterations": Bounds(ge=1),
    "grpo.epsilon": Bounds(ge=0),
    "grpo.epsilon_high": Bounds(ge=0),
    "grpo.max_grad_norm": Bounds(ge=0),
    "grpo.weight_decay": Bounds(ge=0),
    "grpo.warmup_ratio": Bounds(ge=0, le=1),
    "grpo.warmup_steps": Bounds(ge=0),
    "grpo.num_train_epochs": Bounds(gt=0),
    "grpo.adam_beta1": Bounds(ge=0, lt=1),
    "grpo.adam_beta2": Bounds(ge=0, lt=1),
    "grpo.adam_epsilon": Bounds(gt=0),
    "lora.r": Bounds(ge=1),
    "lora.lora_alpha": Bounds(gt=0),
    "lora.lora_dropout": Bounds(ge=0, lt=1),
    "data.size": Bounds(ge=1),
    "data.max_prompt_length": Bounds(ge=1),
    "data.eval_size": Bounds(ge=0),
}


def bounds_problem(where: str, value: Any) -> str | None:
    """Why ``value`` cannot land at ``where`` (e.g. "grpo.beta"), or None. Any number must be finite."""
    bounds = VALUE_BOUNDS.get(where, Bounds())
    return bounds.problem(value)


@dataclass(frozen=True)
class RunSetting:
    name: str  # the key in a hypothesis's treatment: and the flag's name (--kl-beta for kl_beta)
    type: type  # int, float, str or bool
    lands: str  # where the value goes in a resolved arm: "grpo.beta", "data.max_prompt_length", "model", ...
    scope: str  # "setup": both arms (describes the run being debugged); "treatment": the treatment arm only
    help: str
    choices: tuple[str, ...] = ()
    flag: str = ""  # the flag when it is not --<name>: "--no-peft" sets peft to false
    metavar: str = ""
    multiple: bool = False  # a list, given as a repeated flag
    # a treatment hypotrack applies to the built trainer (hypotrack/treatments/), so a command experiment needs no
    # flag of its script's for it
    inside_trainer: bool = False

    @property
    def flag_name(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def bounds(self) -> Bounds:
        return VALUE_BOUNDS.get(self.lands + ("*" if self.name.endswith("_factor") else ""), Bounds())

    def render(self, value: Any) -> list[str]:
        """This setting as command-line words (for the `hypotrack run ...` line)."""
        if self.type is bool:
            if self.flag:
                return [self.flag] if value is False else []
            return [self.flag_name] if value else []
        if self.multiple:
            return [word for item in value for word in (self.flag_name, str(item))]
        return [self.flag_name, f"{value:g}" if isinstance(value, float) else str(value)]


# The settings that land in the arm's config (the treatments that act inside the trainer are added below).
_CONFIG_SETTINGS: tuple[RunSetting, ...] = (
    # --- the setup being debugged: both arms
    RunSetting("max_steps", int, "max_steps", "setup", "Training steps per arm (both arms)."),
    RunSetting("batch_size", int, "grpo.per_device_train_batch_size", "setup",
               "per_device_train_batch_size (both arms)."),
    RunSetting("num_generations", int, "grpo.num_generations", "setup", "Completions per prompt (both arms)."),
    RunSetting("logging_steps", int, "grpo.logging_steps", "setup", "Log every N steps (both arms)."),
    RunSetting("model", str, "model", "setup", "Model for both arms: a local folder, a hub id or toy:<task>.",
               metavar="PATH|HUB_ID|toy:TASK"),
    RunSetting("dataset", str, "data", "setup",
               "Dataset for both arms: 'name,config,split', a loader 'pkg.mod:func' or a toy task.", metavar="SPEC"),
    RunSetting("plant", str, "plant", "setup", "Plant a known fault in both arms (toy lab self-test).",
               metavar="FAULT", multiple=True),
    # --- the treatment: the treatment arm only, on top of the hypothesis's own treatment
    RunSetting("peft", bool, "lora.enabled", "treatment", "Treatment arm: full fine-tuning instead of LoRA.",
               flag="--no-peft"),
    RunSetting("learning_rate", float, "grpo.learning_rate", "treatment", "Treatment arm learning rate."),
    RunSetting("learning_rate_factor", float, "grpo.learning_rate", "treatment",
               "Treatment arm: the control's learning rate times this factor (e.g. 0.1 for full fine-tuning "
               "where the run uses LoRA).", metavar="FACTOR"),
    RunSetting("num_generations_factor", int, "grpo.num_generations", "treatment",
               "Treatment arm: this many times more completions per prompt (the batch grows with them, so the "
               "prompts per step stay the same).", metavar="FACTOR"),
    RunSetting("max_completion_length_factor", float, "grpo.max_completion_length", "treatment",
               "Treatment arm: the control's completion budget times this factor.", metavar="FACTOR"),
    RunSetting("plain_sampling", bool, "grpo.temperature", "treatment",
               "Treatment arm: sample as the loss scores (temperature 1, no top-k/top-p/min-p, no repetition "
               "penalty, no generation_kwargs)."),
    RunSetting("scale_rewards", str, "grpo.scale_rewards", "treatment", "Treatment arm advantage scaling.",
               choices=SCALE_REWARDS),
    RunSetting("kl_beta", float, "grpo.beta", "treatment", "Treatment arm KL coefficient (GRPOConfig beta)."),
    RunSetting("loss_type", str, "grpo.loss_type", "treatment", "Treatment arm loss type.", choices=LOSS_TYPES),
    RunSetting("max_prompt_length", int, "data.max_prompt_length", "treatment",
               "Treatment arm prompt budget in tokens (data side)."),
    RunSetting("truncate_prompts", bool, "data.max_prompt_length", "treatment",
               "Treatment arm: no prompt budget, prompts are never cut.", flag="--no-truncation"),
    RunSetting("max_completion_length", int, "grpo.max_completion_length", "treatment",
               "Treatment arm completion budget in tokens (GRPOConfig max_completion_length)."),
    RunSetting("task_reward_only", bool, "rewards", "treatment",
               "Treatment arm: train on the task reward alone, without the auxiliary rewards."),
    RunSetting("generator_dtype", str, "generator_dtype", "treatment",
               "Treatment arm: the dtype vLLM serves the model in ('trainer': the trainer's own; 'auto': vLLM's "
               "choice); nothing to do where the trained model generates itself.", choices=GENERATOR_DTYPES),
)


def _treatment_settings() -> tuple[RunSetting, ...]:
    """A flag for each treatment that acts inside the trainer, declared on its class (hypotrack/treatments/):
    it lands in the arm's list of treatments, and a command experiment takes it without a flag of its script's.
    The catalogue is read by name, as the hooks' is: it imports no torch."""
    import importlib

    classes = importlib.import_module("hypotrack.treatments.manifest").TREATMENT_CLASSES
    return tuple(RunSetting(name, bool, "treatments", "treatment", cls.help, inside_trainer=True)
                 for name, cls in classes.items())


RUN_SETTINGS: tuple[RunSetting, ...] = (*_CONFIG_SETTINGS, *_treatment_settings())
SETTINGS_BY_NAME: dict[str, RunSetting] = {s.name: s for s in RUN_SETTINGS}
SETUP_SETTINGS: tuple[str, ...] = tuple(s.name for s in RUN_SETTINGS if s.scope == "setup")
TREATMENT_SETTINGS: tuple[str, ...] = tuple(s.name for s in RUN_SETTINGS if s.scope == "treatment")


def command_line(hypothesis_id: str, treatment: dict[str, Any]) -> str:
    """The `hypotrack run` line that tests a hypothesis, its treatment spelled as flags.

    ``treatment`` is the hypothesis's treatment with defaults left out; `set:` entries become
    `--set KEY=VALUE`. (The hypothesis's own treatment applies without the flags; they show what changes.)
    """
    words = ["hypotrack", "run", hypothesis_id]
    for setting in RUN_SETTINGS:
        if treatment.get(setting.name) is not None:
            words += setting.render(treatment[setting.name])
    for key, value in (treatment.get("set") or {}).items():
        words += ["--set", f"{key}={_yaml_scalar(value)}"]
    return " ".join(words)


def _yaml_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
