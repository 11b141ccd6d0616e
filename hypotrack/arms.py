"""Resolve a hypothesis + experiment + CLI flags into one concrete config per arm x seed.

Control is the experiment as declared (plus the hypothesis's `control:` changes and the
flags that apply to both arms); treatment adds the hypothesis's `treatment:` overrides,
and the treatment flags given on the command line override those.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .errors import HypotrackError
from .spec.models import Experiment, Hypothesis, Overrides
from .spec.settings_check import check_setting

# Flags that describe the setup being debugged apply to both arms; the rest define the treatment.
SHARED_FIELDS = ("max_steps", "batch_size", "num_generations", "logging_steps", "model", "dataset", "plant")


class ArmSpec(BaseModel):
    """Everything one worker needs to train one arm x seed; serialised to JSON for the worker."""

    model_config = ConfigDict(extra="forbid")

    hypothesis_id: str
    test_id: str = ""
    arm: str
    seed: int
    trainer: str
    experiment_name: str
    experiment_dir: str  # modules beside the experiment file are importable
    model: str
    data: dict[str, Any]
    rewards: list[str]
    reward_weights: list[float] | None
    grpo: dict[str, Any]  # GRPOConfig fields, resolved
    lora: dict[str, Any] | None  # None = full fine-tuning
    max_steps: int
    hooks: list[str] = Field(default_factory=list)
    hook_settings: dict[str, dict[str, Any]] = Field(default_factory=dict)
    plant: list[str] = Field(default_factory=list)
    deterministic: bool = False
    critic: dict[str, Any] | None = None
    parity: dict[str, Any] | None = None
    output_dir: str = ""
    threads: int = 1

    @property
    def key(self) -> str:
        return f"{self.arm}/{self.seed}"

    def config_for_hash(self) -> dict[str, Any]:
        return self.model_dump(exclude={"test_id", "output_dir", "threads", "seed", "arm"})


# Where each simple flag lands in a resolved arm: (section, key); section None is the top level.
FLAG_PATHS: dict[str, tuple[str | None, str]] = {
    "peft": ("lora", "enabled"),
    "scale_rewards": ("grpo", "scale_rewards"),
    "kl_beta": ("grpo", "beta"),
    "loss_type": ("grpo", "loss_type"),
    "learning_rate": ("grpo", "learning_rate"),
    "batch_size": ("grpo", "per_device_train_batch_size"),
    "num_generations": ("grpo", "num_generations"),
    "logging_steps": ("grpo", "logging_steps"),
    "max_prompt_length": ("data", "max_prompt_length"),
    "max_steps": (None, "max_steps"),
    "model": (None, "model"),
}


def _apply(base: dict[str, Any], overrides: Overrides, fields: tuple[str, ...] | None, where: str) -> dict[str, Any]:
    """Apply the chosen override fields to a flat arm dict; ``fields=None`` means all of them."""
    out = json.loads(json.dumps(base))  # deep copy of plain data
    given = overrides.model_dump(exclude_defaults=True)
    for name, value in given.items():
        if fields is not None and name not in fields:
            continue
        if name in FLAG_PATHS:
            section, key = FLAG_PATHS[name]
            target = out if section is None else out[section]
            target[key] = value
        elif name == "dataset":
            out["data"] = {**_data_from_flag(value), "size": out["data"].get("size", 256),
                           "max_prompt_length": out["data"].get("max_prompt_length"),
                           "prompt_column": out["data"].get("prompt_column", "prompt"),
                           "truncation_side": out["data"].get("truncation_side", "left")}
        elif name == "rewards":
            out["rewards"] = value
            out["reward_weights"] = None
        elif name == "plant":
            out["plant"] = sorted(set(out["plant"]) | set(value))
        elif name in ("critic", "parity"):
            out[name] = {**(out.get(name) or {}), **value}
        elif name == "set":
            for key, val in value.items():
                message = check_setting(key, val)
                if message:
                    raise HypotrackError(f"{where}: --set {key}={val!r}: {message}")
                if key.startswith("lora."):
                    out["lora"][key[len("lora."):]] = val
                else:
                    out["grpo"][key] = val
    return out


def _apply_fault_config(arm: dict[str, Any]) -> None:
    """Planted faults that live in the config (e.g. a prompt budget that cuts the answer) are part of
    the setup: applied before the hypothesis's changes, so a treatment can still override them."""
    if not arm["plant"]:
        return
    from .toy.faults import FAULTS, apply_config

    for name in arm["plant"]:
        if name not in FAULTS:
            raise HypotrackError(f"unknown planted fault {name!r} (known: {', '.join(sorted(FAULTS))})")
        apply_config(name, arm)


def _data_from_flag(value: str) -> dict[str, Any]:
    from .spec.models import IMPORT_PATH

    if IMPORT_PATH.match(value):
        return {"loader": value, "task": None, "dataset": None}
    if value in ("arith", "musique-mini"):
        return {"task": value, "dataset": None, "loader": None}
    return {"dataset": value, "task": None, "loader": None}


def resolve_arms(
    hypothesis: Hypothesis,
    experiment: Experiment,
    experiment_path: Path,
    cli: Overrides,
    *,
    seeds: list[int] | None = None,
    arms: list[str] | None = None,
    deterministic: bool = False,
) -> list[ArmSpec]:
    """One ArmSpec per arm x seed; raises HypotrackError for settings that cannot work."""
    base = {
        "model": experiment.model,
        "data": experiment.data.model_dump(),
        "rewards": list(experiment.rewards),
        "reward_weights": experiment.reward_weights,
        "grpo": dict(experiment.settings),
        "lora": experiment.lora.model_dump(),
        "max_steps": experiment.max_steps,
        "plant": list(experiment.plant),
        "critic": experiment.critic,
        "parity": experiment.parity,
    }
    where = f"hypothesis {hypothesis.id}"
    shared = _apply(base, cli, SHARED_FIELDS, "command line")
    _apply_fault_config(shared)
    treatment_flags = tuple(name for name in Overrides.model_fields if name not in SHARED_FIELDS)
    control = _apply(shared, hypothesis.control, None, f"{where} control")
    # The control arm's changes are part of the setup (e.g. h04's tight prompt budget), so the
    # treatment starts from them and overrides only what it names.
    treatment = _apply(control, hypothesis.treatment, None, f"{where} treatment")
    per_arm = {"control": control, "treatment": _apply(treatment, cli, treatment_flags, "command line")}
    chosen_arms = arms or list(hypothesis.arms)
    for arm in chosen_arms:
        if arm not in per_arm:
            raise HypotrackError(f"--arms: unknown arm {arm!r} (control, treatment)")
    if "treatment" not in chosen_arms:
        ignored = sorted(set(cli.model_dump(exclude_defaults=True)) & set(treatment_flags))
        if ignored:
            flags = ", ".join("--no-peft" if name == "peft" else "--" + name.replace("_", "-") for name in ignored)
            raise HypotrackError(
                f"{flags}: these flags change the treatment arm only, and --arms {','.join(chosen_arms)} does not run "
                "it. To change the setup both arms share, edit the experiment file (its settings: or lora:).")
    chosen_seeds = seeds if seeds is not None else list(experiment.seeds)
    specs = []
    for arm in chosen_arms:
        resolved = per_arm[arm]
        _check_resolved(resolved, arm)
        for seed in chosen_seeds:
            specs.append(ArmSpec(
                hypothesis_id=hypothesis.id, arm=arm, seed=seed, trainer=experiment.trainer,
                experiment_name=experiment.name, experiment_dir=str(experiment_path.parent.resolve()),
                model=resolved["model"], data=resolved["data"], rewards=resolved["rewards"],
                reward_weights=resolved["reward_weights"], grpo=resolved["grpo"],
                lora=resolved["lora"] if resolved["lora"].get("enabled", True) else None,
                max_steps=resolved["max_steps"], hooks=list(hypothesis.hooks),
                hook_settings=dict(hypothesis.hook_settings), plant=resolved["plant"],
                deterministic=deterministic, critic=resolved["critic"], parity=resolved["parity"],
            ))
    return specs


def _check_resolved(resolved: dict[str, Any], arm: str) -> None:
    grpo = resolved["grpo"]
    for key, value in grpo.items():
        message = check_setting(key, value)
        if message:
            raise HypotrackError(f"{arm} arm: {message}")
    batch = grpo.get("per_device_train_batch_size", 8)
    generations = grpo.get("num_generations", 8)
    if generations is not None and generations < 2:
        raise HypotrackError(f"{arm} arm: num_generations must be at least 2 for group advantages (got {generations})")
    if generations and batch % generations != 0 and not grpo.get("generation_batch_size") \
            and not grpo.get("steps_per_generation"):
        raise HypotrackError(
            f"{arm} arm: the batch size ({batch}) must be a multiple of num_generations ({generations}) "
            "so every prompt gets a whole group; change --batch-size or --num-generations")
    if grpo.get("scale_rewards") not in (None, "group", "batch", "none", True, False):
        raise HypotrackError(f"{arm} arm: scale_rewards must be group, batch or none")


def config_hash(specs: list[ArmSpec]) -> str:
    payload = json.dumps([s.config_for_hash() | {"arm": s.arm} for s in specs], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
