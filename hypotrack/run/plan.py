"""Resolve a hypothesis + experiment + command-line settings into one concrete ArmSpec per arm x seed.

Control is the experiment as declared (plus the hypothesis's `control:` changes and the
setup settings given on the command line, which apply to both arms); treatment adds the
hypothesis's `treatment:` overrides, and the treatment settings given on the command
line override those. Where each setting lands is declared in spec/run_settings.py.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from hypotrack.errors import HypotrackError
from hypotrack.protocol import ArmSpec
from hypotrack.spec.models import IMPORT_PATH, Experiment, Hypothesis, Overrides
from hypotrack.spec.run_settings import SETTINGS_BY_NAME, SETUP_SETTINGS, TREATMENT_SETTINGS
from hypotrack.spec.settings_check import check_setting
from hypotrack.spec.vocabulary import SCALE_REWARDS


def _land(arm: dict[str, Any], name: str, value: Any) -> None:
    """Put one run setting's value where RUN_SETTINGS says it lands."""
    setting = SETTINGS_BY_NAME[name]
    if name == "dataset":
        data = arm["data"]
        arm["data"] = {**data, **_data_from_flag(value)}
    elif name == "plant":
        arm["plant"] = sorted(set(arm["plant"]) | set(value))
    elif name == "task_reward_only":
        if value:  # the task reward is the first function; its weight stays what it was
            arm["reward_weights"] = arm["reward_weights"][:1] if arm["reward_weights"] else None
            arm["rewards"] = arm["rewards"][:1]
    elif "." in setting.lands:
        section, key = setting.lands.split(".", 1)
        arm[section][key] = value
    else:
        arm[setting.lands] = value


def _apply(base: dict[str, Any], overrides: Overrides, names: tuple[str, ...] | None, where: str) -> dict[str, Any]:
    """Apply the chosen override fields to a resolved arm dict; ``names=None`` means all of them."""
    out = copy.deepcopy(base)
    for name, value in overrides.model_dump(exclude_defaults=True).items():
        if names is not None and name not in names:
            continue
        if name in SETTINGS_BY_NAME:
            _land(out, name, value)
        elif name == "rewards":
            out["rewards"] = value
            out["reward_weights"] = None
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
    from hypotrack.toy.faults import FAULTS, apply_config

    for name in arm["plant"]:
        if name not in FAULTS:
            raise HypotrackError(f"unknown planted fault {name!r} (known: {', '.join(sorted(FAULTS))})")
        apply_config(name, arm)


def _data_from_flag(value: str) -> dict[str, Any]:
    from hypotrack.toy.lab import TASKS

    if IMPORT_PATH.match(value):
        return {"loader": value, "task": None, "dataset": None}
    if value in TASKS:
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
    shared = _apply(base, cli, SETUP_SETTINGS, "command line")
    _apply_fault_config(shared)
    control = _apply(shared, hypothesis.control, None, f"{where} control")
    # The control arm's changes are part of the setup (e.g. h04's tight prompt budget), so the
    # treatment starts from them and overrides only what it names.
    treatment = _apply(control, hypothesis.treatment, None, f"{where} treatment")
    treatment_flags = (*TREATMENT_SETTINGS, "set", "rewards")
    per_arm = {"control": control, "treatment": _apply(treatment, cli, treatment_flags, "command line")}
    chosen_arms = arms or list(hypothesis.arms)
    for arm in chosen_arms:
        if arm not in per_arm:
            raise HypotrackError(f"--arms: unknown arm {arm!r} (control, treatment)")
    if "treatment" not in chosen_arms:
        ignored = sorted(set(cli.model_dump(exclude_defaults=True)) & set(treatment_flags))
        if ignored:
            flags = ", ".join(SETTINGS_BY_NAME[name].flag_name if name in SETTINGS_BY_NAME else f"--{name}"
                              for name in ignored)
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
                reward_weights=resolved["reward_weights"], grpo=resolved["grpo"], lora=resolved["lora"],
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
    if grpo.get("scale_rewards") not in (None, *SCALE_REWARDS, True, False):
        raise HypotrackError(f"{arm} arm: scale_rewards must be one of {', '.join(SCALE_REWARDS)}")


def config_hash(specs: list[ArmSpec]) -> str:
    payload = json.dumps([s.config_for_hash() | {"arm": s.arm} for s in specs], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
