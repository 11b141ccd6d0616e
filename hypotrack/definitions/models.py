"""Pydantic models of the two user-written YAML objects: Experiment and Hypothesis.

Everything is ``extra="forbid"`` so a typo in a key is an error at load time,
not a silently ignored setting discovered after a ten-minute run.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from hypotrack.reading import STEP_AGGREGATIONS

from .command import CommandSpec
from .reading import MetricReading, Operator, reading_steps, reading_window
from .run_settings import RUN_SETTINGS, VALUE_BOUNDS, RunSetting, command_line
from .triage import Triage
from .unread import GIVEN, read_only_when
from .vocabulary import ARMS, EFFECT_OUTCOMES, GENERATOR_DTYPES, PRIORITIES, REQUIREMENTS, TRAINERS

Priority = Literal[PRIORITIES]  # type: ignore[valid-type]

IMPORT_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
HYPOTHESIS_ID = re.compile(r"^h\d{2,}$")


class _Strict(BaseModel):
    # defer_build: schemas are built on first use, so a command that never validates an
    # Experiment (status, next) does not pay for building its schema at import.
    # allow_inf_nan=False: a NaN or infinite number in any YAML field (a threshold, a weight) is a load
    # error with its file and line; every comparison with NaN is False, so it would decide silently.
    model_config = ConfigDict(extra="forbid", frozen=False, defer_build=True, allow_inf_nan=False)


# --------------------------------------------------------------------------- experiment


class DataSpec(_Strict):
    """Where the prompts come from: exactly one of task, dataset or loader."""

    task: str | None = Field(None, description="A built-in toy-lab task: 'arith' or 'musique-mini'.")
    dataset: str | None = Field(
        None, description="A datasets spec 'name,config,split' (e.g. 'org/musique-mini,answerable,train[:100]')."
    )
    loader: str | None = Field(
        None, description="Import path 'pkg.module:func' of a function returning a datasets.Dataset with a prompt column."
    )
    size: int = Field(256, **VALUE_BOUNDS["data.size"].pydantic(), description="Number of rows to draw (toy tasks and loaders receive it).")
    prompt_column: str = Field("prompt", description="Column holding the prompt text.")
    max_prompt_length: int | None = Field(
        None, **VALUE_BOUNDS["data.max_prompt_length"].pydantic(), description="Truncate prompts to this many tokens on the data side (GRPOConfig has no such field)."
    )
    truncation_side: Literal["left", "right"] = Field(
        "left", description="Which end of a too-long prompt is cut (left keeps the question at the end).",
        json_schema_extra=read_only_when(max_prompt_length=(GIVEN,)),
    )
    answer_span: list[str] | None = Field(
        None, min_length=2, max_length=2,
        description="Where the answer-bearing text sits in each prompt: two columns holding its start and end "
        "character offsets (end exclusive), e.g. [answer_start, answer_end]. Lets hypotrack tell whether "
        "truncation cut the answer (h04).",
    )
    answer_text_column: str | None = Field(
        None, description="Instead of answer_span: a column whose text must still be in the kept prompt "
        "(e.g. the supporting paragraph or the answer string).",
    )
    reference_column: str | None = Field(
        None, description="The column holding each row's correct answer, written as a completion would be: "
        "hypotrack scores it (and another row's answer) with the reward functions to check they work (h13). "
        "Undeclared, it is the task reward's own argument that is a column (def exact(completions, answer, "
        "**kwargs) reads `answer`), and the verdict says so.",
    )
    eval_size: int = Field(
        64, **VALUE_BOUNDS["data.eval_size"].pydantic(),
        description="Held-out rows for the evaluation before and after training (never trained on); 0 turns "
        "the evaluation off.",
    )

    @model_validator(mode="after")
    def _exactly_one_source(self) -> "DataSpec":
        given = [name for name in ("task", "dataset", "loader") if getattr(self, name)]
        if len(given) != 1:
            raise ValueError(f"give exactly one of task, dataset or loader (got {given or 'none'})")
        if self.answer_span and self.answer_text_column:
            raise ValueError("give answer_span or answer_text_column, not both")
        if self.loader and not IMPORT_PATH.match(self.loader):
            raise ValueError(f"loader {self.loader!r} must look like 'pkg.module:function'")
        if self.dataset and len(self.dataset.split(",")) not in (1, 2, 3):
            raise ValueError(f"dataset {self.dataset!r} must look like 'name,config,split'")
        return self


# The adapter's shape is read only when there are adapters (enabled: false trains the full model).
_WITH_LORA = read_only_when(enabled=(True,))


class LoraSpec(_Strict):
    enabled: bool = Field(True, description="Train LoRA adapters through peft; false means full fine-tuning.")
    r: int = Field(8, **VALUE_BOUNDS["lora.r"].pydantic(), description="LoRA rank.", json_schema_extra=_WITH_LORA)
    lora_alpha: int = Field(16, **VALUE_BOUNDS["lora.lora_alpha"].pydantic(), description="LoRA scaling numerator.",
                            json_schema_extra=_WITH_LORA)
    lora_dropout: float = Field(0.0, **VALUE_BOUNDS["lora.lora_dropout"].pydantic(),
                                description="Dropout on the adapter input.", json_schema_extra=_WITH_LORA)
    target_modules: list[str] | str = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"], description="Modules that get adapters.",
        json_schema_extra=_WITH_LORA,
    )
    bias: Literal["none", "all", "lora_only"] = Field("none", json_schema_extra=_WITH_LORA)


class Experiment(_Strict):
    """A base training setup that hypotheses perturb."""

    name: str = Field(description="Must equal the file name without .yaml.")
    description: str = ""
    trainer: Literal[TRAINERS] = "grpo"  # type: ignore[valid-type]
    model: str = Field(
        "", description="'toy:<task>' for the embedded toy lab, a local model directory, or a hub id "
        "(not for a command experiment: its script loads its own model)."
    )
    data: DataSpec | None = Field(None, description="Where the prompts come from (not for a command experiment).")
    command: CommandSpec | None = Field(
        None, description="The user's own training command instead of model/data/rewards: hypotrack starts it "
        "with its diagnostics inside every GRPOTrainer the script creates (definitions/command.py).")
    rewards: list[str] = Field(default_factory=list, description="Reward functions as 'pkg.module:func'.")
    reward_weights: list[float] | None = None
    task_reward: str | None = Field(
        None, description="Which reward function measures the task itself (its name or import path); the "
        "others are auxiliary (format, style, length...). Default: the first one.",
    )
    settings: dict[str, Any] = Field(default_factory=dict, description="TRL GRPOConfig fields, passed through.")
    lora: LoraSpec = Field(default_factory=LoraSpec)
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2], min_length=1)
    max_steps: int = Field(30, **VALUE_BOUNDS["max_steps"].pydantic())
    plant: list[str] = Field(default_factory=list, description="Planted faults (toy lab self-test).")
    generator_dtype: Literal[GENERATOR_DTYPES] = Field(
        "auto", description="With use_vllm: the dtype vLLM serves the model in. 'auto' is vLLM's own choice (what "
        "TRL gives it: bfloat16 for a float32 checkpoint), 'trainer' the dtype the trainer computes in.")
    critic: dict[str, Any] | None = Field(None, description="Critic settings when trainer is 'critic'.",
                                          json_schema_extra=read_only_when(trainer=("critic",)))
    parity: dict[str, Any] | None = Field(None, description="Parity settings when trainer is 'parity'.",
                                          json_schema_extra=read_only_when(trainer=("parity",)))

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, value: list[int]) -> list[int]:
        # a repeated seed trains into the same folder twice and counts its metrics twice
        repeated = sorted({seed for seed in value if value.count(seed) > 1})
        if repeated:
            raise ValueError(f"seed {repeated[0]} is listed twice: each seed is one paired replicate")
        if any(seed < 0 for seed in value):
            raise ValueError(f"seeds must be 0 or more (got {min(value)})")
        return value

    @field_validator("rewards")
    @classmethod
    def _import_paths(cls, value: list[str]) -> list[str]:
        for path in value:
            if not IMPORT_PATH.match(path):
                raise ValueError(f"reward function {path!r} must look like 'pkg.module:function'")
        return value

    # Checks against `rewards` are field validators (rewards is declared first) so that an error names
    # the key at fault and its line, not the top of the file.
    @field_validator("reward_weights")
    @classmethod
    def _one_weight_per_reward(cls, value: list[float] | None, info: ValidationInfo) -> list[float] | None:
        rewards = info.data.get("rewards")
        if value is not None and rewards is not None and len(value) != len(rewards):
            raise ValueError(f"reward_weights has {len(value)} weight{'s' if len(value) != 1 else ''} for "
                             f"{len(rewards)} reward function{'s' if len(rewards) != 1 else ''}: give one per reward")
        return value

    @field_validator("task_reward")
    @classmethod
    def _task_reward_is_a_reward(cls, value: str | None, info: ValidationInfo) -> str | None:
        rewards = info.data.get("rewards")
        if value is not None and rewards:
            _task_reward_index(value, rewards)  # raises for a name that is not one of the rewards
        command = info.data.get("command")  # a command experiment lists the names its rewards are logged under
        names = command.reward_functions if command is not None else []
        if value is not None and names and value not in names:
            raise ValueError(f"task_reward {value!r} is not one of command.reward_functions ({', '.join(names)})")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "Experiment":
        if self.command is not None:
            return self._command_consistent()
        missing = [key for key, value in (("model", self.model), ("data", self.data)) if not value]
        if missing:
            raise ValueError(f"{' and '.join(repr(k) for k in missing)} missing: an experiment needs a model and its "
                             "data (or a 'command': the user's own training script, which loads both)")
        if self.trainer == "grpo" and not self.rewards:
            raise ValueError("a grpo experiment needs at least one reward function in 'rewards'")
        if self.trainer == "critic" and self.critic is None:
            raise ValueError("trainer 'critic' needs a 'critic:' section")
        if self.trainer == "parity" and self.parity is None:
            raise ValueError("trainer 'parity' needs a 'parity:' section")
        return self


    def _command_consistent(self) -> "Experiment":
        if self.trainer != "grpo":
            raise ValueError("a command experiment trains GRPO (its script's GRPOTrainer): trainer must be grpo")
        if self.rewards or self.model or self.plant or self.data is not None:
            raise ValueError("a command experiment's script loads its own model, data and rewards: list the names "
                             "its rewards are logged under in command.reward_functions (and the answers' column in "
                             "command.reference_column), not model/data/rewards/plant")
        names = self.command.reward_functions
        if self.task_reward is None and not names:
            raise ValueError("a command experiment names its task reward: task_reward: <the name TRL logs it "
                             "under, rewards/<name>/mean>")
        return self

    def reward_names(self) -> list[str]:
        """The reward functions by import path, or by logged name for a command experiment."""
        if self.command is None:
            return list(self.rewards)
        return list(self.command.reward_functions) or [self.task_reward]

    def task_reward_index(self) -> int:
        """Position of the task reward in `rewards` (the first unless `task_reward` names another)."""
        return 0 if self.task_reward is None else _task_reward_index(self.task_reward, self.reward_names())


def _task_reward_index(task_reward: str, rewards: list[str]) -> int:
    for index, path in enumerate(rewards):
        if task_reward in (path, path.rsplit(":", 1)[-1]):
            return index
    names = ", ".join(path.rsplit(":", 1)[-1] for path in rewards)
    raise ValueError(f"task_reward {task_reward!r} is not one of the reward functions ({names})")


# --------------------------------------------------------------------------- hypothesis


def _setting_field(setting: RunSetting) -> tuple[Any, Any]:
    kind: Any = Literal[setting.choices] if setting.choices else setting.type  # type: ignore[valid-type]
    if setting.multiple:
        kind = list[kind]
    constraints = {} if setting.multiple or setting.type is bool else setting.bounds.pydantic()
    return kind | None, Field(None, description=setting.help, **constraints)


class _OverridesBase(_Strict):
    """Config changes of a treatment arm; the same names as the flags of `hypotrack run` (RUN_SETTINGS)."""

    rewards: list[str] | None = Field(None, description="Replace the reward functions by import path.")
    set: dict[str, Any] = Field(default_factory=dict, description="Any GRPOConfig field, or lora.<field>.")
    critic: dict[str, Any] = Field(default_factory=dict, description="Critic settings changed (trainer: critic).")
    parity: dict[str, Any] = Field(default_factory=dict, description="Parity settings changed (trainer: parity).")

    @field_validator("rewards")
    @classmethod
    def _import_paths(cls, value: list[str] | None) -> list[str] | None:
        for path in value or []:
            if not IMPORT_PATH.match(path):
                raise ValueError(f"reward function {path!r} must look like 'pkg.module:function'")
        return value


# One field per run setting, with its type, choices and bounds: declared once, in run_settings.py.
Overrides = create_model(
    "Overrides", __base__=_OverridesBase, __doc__=_OverridesBase.__doc__,
    **{setting.name: _setting_field(setting) for setting in RUN_SETTINGS},
)


# A criterion compares arms, not a run with its own start: every step aggregation but growth.
CRITERION_STEPS = tuple(name for name in STEP_AGGREGATIONS if name != "growth")


class Criterion(MetricReading):
    """A declarative test on one metric: aggregate over steps, then over seeds, then compare."""

    steps: reading_steps(CRITERION_STEPS) = "mean_last"  # type: ignore[valid-type]
    k: reading_window(CRITERION_STEPS) = 10  # type: ignore[valid-type]
    op: Operator = ">="
    arm: Literal["control", "treatment", "delta"] = Field(
        "delta", description="'delta' is treatment minus control, paired by seed."
    )
    seeds: Literal["all", "majority", "any", "mean"] = Field(
        "majority", description="all/majority/any: the comparison per seed; mean: compare the mean over seeds."
    )
    why: str = Field("", description="What it means when this holds (shown with the evidence).")
    if_missing: str = Field("", description="What to do when the run cannot produce this metric (shown then).")


class AnyOf(_Strict):
    """Holds when at least one of its criteria holds (e.g. two different signatures of one bug)."""

    any: list[Criterion] = Field(min_length=1)


def _clause_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "any" if "any" in value else "criterion"
    return "any" if isinstance(value, AnyOf) else "criterion"


# Discriminated, so a typo in a criterion is reported once, against Criterion, instead of
# once per union member (pydantic would also list AnyOf's "any: missing", "metric: unknown key").
Clause = Annotated[Annotated[Criterion, Tag("criterion")] | Annotated[AnyOf, Tag("any")],
                   Discriminator(_clause_kind)]


class Criteria(_Strict):
    validated: list[Clause] = Field(default_factory=list, description="All must hold for 'validated'.")
    invalidated: list[Clause] = Field(default_factory=list, description="All must hold for 'invalidated'.")

    def all_criteria(self) -> list[tuple[str, tuple, Criterion]]:
        """(group, location, criterion) for every criterion, nested ones included."""
        out = []
        for group in ("validated", "invalidated"):
            for index, clause in enumerate(getattr(self, group)):
                if isinstance(clause, AnyOf):
                    out += [(group, (index, "any", j), c) for j, c in enumerate(clause.any)]
                else:
                    out.append((group, (index,), clause))
        return out

    @model_validator(mode="after")
    def _not_empty(self) -> "Criteria":
        if not self.validated and not self.invalidated:
            raise ValueError("give at least one criterion under validated or invalidated")
        return self


class Resources(_Strict):
    time: str = Field("", description="Wall-time estimate, e.g. '1-2 hours' on the real setup.")
    memory: str = Field("", description="Memory estimate, e.g. 'higher: longer prompts'.")
    toy_seconds: float | None = Field(None, description="Measured wall time on the toy lab.")


class EffectSpec(_Strict):
    """How the treatment's effect is measured: treatment minus control on an outcome, paired by seed."""

    outcome: Literal[EFFECT_OUTCOMES] = Field(  # type: ignore[valid-type]
        "task_reward", description="task_reward: the task reward over the last steps of training; eval_greedy / "
        "eval_sampled: the held-out evaluation after training; none: the criteria are the whole test.")
    last_steps: int = Field(10, ge=1, description="Steps at the end of training the task reward is averaged over.",
                            json_schema_extra=read_only_when(outcome=("task_reward",)))
    meaningful: float = Field(
        0.1, gt=0, description="The smallest improvement worth having, in units of the task reward's spread (its "
        "per-completion std in the control arm): an interval below it means the treatment does not help.",
        json_schema_extra=read_only_when(outcome=tuple(o for o in EFFECT_OUTCOMES if o != "none")))


class Hypothesis(_Strict):
    id: str = Field(description="h01, h02, ...; must match the file name's prefix.")
    title: str
    priority: Priority
    statement: str
    rationale: str = ""
    prerequisites: list[str] = Field(default_factory=list, description="Ids that must be resolved first.")
    order_note: str = Field("", description="Why this comes where it does in the roadmap.")
    experiment: str = Field("toy_arith", description="Default experiment (name in experiments/ or a path).")
    treatment: Overrides = Field(default_factory=Overrides,
                                 description="What the treatment arm changes; the control arm is the experiment as declared.")
    requires: list[Literal[tuple(REQUIREMENTS)]] = Field(  # type: ignore[valid-type]
        default_factory=list, description="What the experiment must have for this hypothesis to apply to it "
        f"({', '.join(REQUIREMENTS)}).")
    effect: EffectSpec = Field(default_factory=EffectSpec)
    hooks: list[str] = Field(default_factory=list, description="Diagnostics hooks to attach.")
    hook_settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    arms: list[Literal[ARMS]] = Field(default_factory=lambda: list(ARMS))  # type: ignore[valid-type]
    criteria: Criteria
    triage: Triage | None = Field(
        None, description="How this bug shows in the metrics a run already logged: signatures over TRL's keys that "
        "`hypotrack triage` weighs to rank the hypotheses before anything is trained (see definitions/triage.py).")
    resources: Resources = Field(default_factory=Resources)
    expected_readings: list[str] = Field(
        default_factory=list, description="Readings that look like this bug but are expected behaviour (shown by "
        "`hypotrack show`), e.g. a GRPO loss of 0 at beta 0.")
    links: list[str] = Field(default_factory=list)
    notes: str = ""

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not HYPOTHESIS_ID.match(value):
            raise ValueError(f"id {value!r} must look like h01")
        return value

    def command_line(self) -> str:
        """The `hypotrack run` line that tests this hypothesis, its treatment spelled as flags."""
        return command_line(self.id, self.treatment.model_dump(exclude_defaults=True))

    def arms_needed(self) -> set[str]:
        needed: set[str] = set()
        for _group, _loc, crit in self.criteria.all_criteria():
            needed |= {"control", "treatment"} if crit.arm == "delta" else {crit.arm}
        return needed
