"""Resolve a hypothesis + experiment + command-line settings into one concrete ArmSpec per arm x seed.

Control is the user's run: the experiment as declared, plus the setup settings given on the
command line (they describe the run and apply to both arms). Treatment adds the hypothesis's
`treatment:` changes, and the treatment settings given on the command line override those.
A hypothesis never changes the control arm; what it needs of the experiment it declares
(`requires:`), and `unmet_requirements` says when the run lacks it. Where each setting lands
is declared in definitions/run_settings.py.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

from hypotrack.definitions.models import IMPORT_PATH, Experiment, Hypothesis, Overrides
from hypotrack.definitions.run_settings import SETTINGS_BY_NAME, SETUP_SETTINGS, TREATMENT_SETTINGS
from hypotrack.definitions.settings_check import check_setting, config_problem
from hypotrack.definitions.vocabulary import SAMPLING_LEFT_TO_THE_SERVER, SCALE_REWARDS, SEQUENCE_IMPORTANCE_MODES
from hypotrack.errors import HypotrackError
from hypotrack.protocol import ArmSpec

# GRPOConfig's defaults (trl 1.16) for the values a factor multiplies when the experiment does not set them.
DEFAULTS = {"learning_rate": 1e-6, "num_generations": 8, "max_completion_length": 256,
            "per_device_train_batch_size": 8}
# What the command line may change in the treatment arm only.
TREATMENT_FLAGS = (*TREATMENT_SETTINGS, "set", "rewards")
# Sampling exactly as TRL scores: log_softmax(logits / temperature) with nothing else.
PLAIN_SAMPLING = {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "min_p": None, "repetition_penalty": 1.0}


def _land(arm: dict[str, Any], name: str, value: Any) -> None:
    """Put one run setting's value where RUN_SETTINGS says it lands."""
    setting = SETTINGS_BY_NAME[name]
    if name == "dataset":
        data = arm["data"]
        arm["data"] = {**data, **_data_from_flag(value)}
    elif name == "plant":
        arm["plant"] = sorted(set(arm["plant"]) | set(value))
    elif setting.lands == "treatments":  # a treatment that acts inside the trainer, by name
        arm["treatments"] = [t for t in arm["treatments"] if t != name] + ([name] if value else [])
    elif name.endswith("_factor"):  # the control's value times the factor
        key = setting.lands.split(".", 1)[1]
        product = arm["grpo"].get(key, DEFAULTS.get(key)) * value
        arm["grpo"][key] = product if key == "learning_rate" else max(1, round(product))  # counts stay integers
        if name == "num_generations_factor":  # the batch grows with the groups: same prompts per step
            batch = arm["grpo"].get("per_device_train_batch_size", DEFAULTS["per_device_train_batch_size"])
            arm["grpo"]["per_device_train_batch_size"] = batch * value
    elif name == "plain_sampling":
        if value:
            arm["grpo"].update(PLAIN_SAMPLING)
            arm["grpo"].pop("generation_kwargs", None)
            if arm["grpo"].get("use_vllm"):  # sent, so a vLLM server's defaults from the model's config do not apply
                arm["grpo"]["generation_kwargs"] = dict.fromkeys(SAMPLING_LEFT_TO_THE_SERVER, 0.0)
    elif name == "truncate_prompts":
        if value is False:
            arm["data"]["max_prompt_length"] = None
    elif name == "task_reward_only":
        if value:  # the task reward alone, with the weight it had
            task = arm["task_reward_index"]
            arm["reward_weights"] = [arm["reward_weights"][task]] if arm["reward_weights"] else None
            arm["rewards"] = [arm["rewards"][task]]
            arm["task_reward_index"] = 0
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
            out["task_reward_index"] = 0
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
    from hypotrack.faults.manifest import configure_arm

    configure_arm(arm["plant"], arm)


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
    adding_seeds: bool = False,
    applies: bool = True,
) -> list[ArmSpec]:
    """One ArmSpec per arm x seed; raises HypotrackError for settings that cannot work.

    adding_seeds: the seeds are added to earlier ones (--more-seeds, --seeds auto).
    applies: False where the hypothesis does not apply to the run (unmet_requirements): no arm trains, so a
    command experiment's treatment is not mapped onto the script's flags, and a flag it lacks refuses nothing."""
    per_arm = _resolved_arms(hypothesis, experiment, cli)
    chosen_arms = arms or list(hypothesis.arms)
    for arm in chosen_arms:
        if arm not in per_arm:
            raise HypotrackError(f"--arms: unknown arm {arm!r} (control, treatment)")
    if "treatment" not in chosen_arms:
        ignored = sorted(set(cli.model_dump(exclude_defaults=True)) & set(TREATMENT_FLAGS))
        if ignored:
            flags = ", ".join(SETTINGS_BY_NAME[name].flag_name if name in SETTINGS_BY_NAME else f"--{name}"
                              for name in ignored)
            raise HypotrackError(
                f"{flags}: these flags change the treatment arm only, and --arms {','.join(chosen_arms)} does not run "
                "it. To change the setup both arms share, edit the experiment file (its settings: or lora:).")
    chosen_seeds = seeds if seeds is not None else list(experiment.seeds)
    _check_seeds_reach_the_command(experiment, experiment_path, chosen_seeds, from_flag=seeds is not None,
                                   adding=adding_seeds)
    specs = []
    for arm in chosen_arms:
        resolved = per_arm[arm]
        _check_resolved(resolved, arm)
        for seed in chosen_seeds:
            spec = _arm_spec(hypothesis, experiment, experiment_path, arm, seed, resolved, deterministic)
            if applies or arm == "control":
                spec = _with_command(spec, hypothesis, experiment, experiment_path, cli, per_arm)
            specs.append(spec)
    return specs


def _check_seeds_reach_the_command(experiment: Experiment, experiment_path: Path, seeds: list[int],
                                   from_flag: bool, adding: bool = False) -> None:
    """A command experiment without a seed mapping runs the same command for every seed: two "seeds" would be one
    run counted twice, so more than one (or any added to earlier ones) is refused, saying how to give the script
    its seed."""
    if experiment.command is None or experiment.command.seed is not None or (len(seeds) < 2 and not adding):
        return
    if adding:
        asked = f"adding seed(s) {seeds} (--more-seeds, --seeds auto)"
    else:
        asked = f"--seeds {len(seeds)}" if from_flag else f"seeds: {seeds} in {experiment_path}"
    raise HypotrackError(f"{asked}: experiment {experiment.name!r} has no command.seed mapping, so every seed would run "
                         "the same command and train the same run, and the verdict would count one run as "
                         "several seeds. Map how a seed reaches your script under command: (seed: \"--seed "
                         "{value}\", or seed: {env: SEED} when the script reads it from the environment), or "
                         "run one seed (--seeds 1, or seeds: [0] in the experiment)")


def _with_command(spec: ArmSpec, hypothesis: Hypothesis, experiment: Experiment, experiment_path: Path,
                  cli: Overrides, per_arm: dict[str, dict[str, Any]]) -> ArmSpec:
    """A command experiment's arm carries its command line (run/planning/command_plan.py)."""
    if experiment.command is None:
        return spec
    from hypotrack.run.planning.command_plan import command_lines

    line = command_lines(hypothesis, experiment, experiment_path, cli, per_arm, spec.seed, (spec.arm,))[spec.arm]
    return spec.model_copy(update={"command": line.argv, "command_env": line.env, "command_cwd": line.cwd})


def control_spec(hypothesis: Hypothesis, experiment: Experiment, experiment_path: Path, cli: Overrides) -> ArmSpec:
    """The user's run as this test would train it (the control arm), whichever arms the test trains:
    what a hypothesis requires of the run is checked on it."""
    per_arm = _resolved_arms(hypothesis, experiment, cli)
    spec = _arm_spec(hypothesis, experiment, experiment_path, "control", experiment.seeds[0], per_arm["control"], False)
    return _with_command(spec, hypothesis, experiment, experiment_path, cli, per_arm)


def _arm_spec(hypothesis: Hypothesis, experiment: Experiment, experiment_path: Path, arm: str, seed: int,
              resolved: dict[str, Any], deterministic: bool) -> ArmSpec:
    return ArmSpec(
        hypothesis_id=hypothesis.id, arm=arm, seed=seed, trainer=experiment.trainer,
        experiment_name=experiment.name, experiment_dir=str(experiment_path.parent.resolve()),
        model=resolved["model"], data=resolved["data"], rewards=resolved["rewards"],
        reward_weights=resolved["reward_weights"], task_reward_index=resolved["task_reward_index"],
        grpo=resolved["grpo"], lora=resolved["lora"],
        max_steps=resolved["max_steps"], hooks=list(hypothesis.hooks),
        hook_settings=dict(hypothesis.hook_settings), plant=resolved["plant"],
        deterministic=deterministic, critic=resolved["critic"], parity=resolved["parity"],
        treatments=resolved["treatments"], generator_dtype=resolved["generator_dtype"],
    )


def _resolved_arms(hypothesis: Hypothesis, experiment: Experiment, cli: Overrides) -> dict[str, dict[str, Any]]:
    """Each arm's settings: control is the experiment plus the setup flags; treatment adds the hypothesis's
    treatment, then the treatment flags."""
    base = {
        "model": experiment.model,
        "data": experiment.data.model_dump() if experiment.data is not None else
        {"reference_column": experiment.command.reference_column},
        "rewards": experiment.reward_names(),
        "reward_weights": experiment.reward_weights,
        "task_reward_index": experiment.task_reward_index(),
        "grpo": dict(experiment.settings),
        "lora": experiment.lora.model_dump(),
        "max_steps": experiment.max_steps,
        "treatments": [],
        "generator_dtype": experiment.generator_dtype,
        "plant": list(experiment.plant),
        "critic": experiment.critic,
        "parity": experiment.parity,
    }
    where = f"hypothesis {hypothesis.id}"
    control = _apply(base, cli, SETUP_SETTINGS, "command line")
    _apply_fault_config(control)
    treatment = _apply(control, hypothesis.treatment, None, f"{where} treatment")
    return {"control": control, "treatment": _apply(treatment, cli, TREATMENT_FLAGS, "command line")}


def unmet_requirements(hypothesis: Hypothesis, control: ArmSpec) -> list[str]:
    """Why the hypothesis cannot apply to this run, one sentence per requirement the control arm lacks."""
    reasons = []
    for requirement in hypothesis.requires:
        if requirement == "kl_term" and not (control.grpo.get("beta") or 0) > 0:
            reasons.append("the experiment has no KL term: beta is 0, so a KL bug cannot affect this run")
        elif requirement == "lora" and not control.peft:
            reasons.append("the experiment trains without LoRA (full fine-tuning): there are no adapters to fall "
                           "out of sync")
        elif requirement == "generator_sync" and not (control.peft or control.grpo.get("use_vllm")):
            reasons.append("the experiment trains without LoRA and generates with the trained model itself (no "
                           "vLLM): there is no adapter and no generator's copy of the weights to fall out of sync")
        elif requirement == "auxiliary_rewards" and len(control.rewards) < 2:
            reasons.append("the experiment has a single reward function: no auxiliary reward can dilute the task "
                           "signal")
        elif requirement == "group_scaling" and not _group_scaled(control.grpo):
            reasons.append(f"the experiment does not divide advantages by a group std (scale_rewards: "
                           f"{control.grpo.get('scale_rewards')}): tiny group differences are not blown up")
        elif requirement == "sequence_importance_sampling" and not _weighs_whole_completions(control.grpo):
            reasons.append("the experiment applies no sequence-level importance weight (it needs use_vllm, "
                           "vllm_importance_sampling_correction on and vllm_importance_sampling_mode sequence_mask or "
                           "sequence_truncate): nothing sums a completion's log-ratios")
    return reasons


def _weighs_whole_completions(grpo: dict[str, Any]) -> bool:
    """Whether TRL weighs each vLLM completion by one importance weight (its defaults in trl 1.16: correction on,
    sequence_mask)."""
    return bool(grpo.get("use_vllm")) and grpo.get("vllm_importance_sampling_correction", True) is not False and \
        grpo.get("vllm_importance_sampling_mode", "sequence_mask") in SEQUENCE_IMPORTANCE_MODES


def _group_scaled(grpo: dict[str, Any]) -> bool:
    """Whether TRL divides by a per-group std (scale_rewards defaults to group in trl 1.16)."""
    if grpo.get("multi_objective_aggregation") == "normalize_then_sum":
        return True  # each reward function is standardised within its group
    return grpo.get("scale_rewards", "group") in ("group", True)


def _check_resolved(resolved: dict[str, Any], arm: str) -> None:
    grpo = resolved["grpo"]
    for key, value in grpo.items():
        message = check_setting(key, value)
        if message:
            raise HypotrackError(f"{arm} arm: {message}")
    problem = config_problem(grpo)
    if problem:
        raise HypotrackError(f"{arm} arm: {problem[1]}; change --batch-size, --num-generations or the --set values "
                             "(GRPOConfig would refuse it)")
    if grpo.get("scale_rewards") not in (None, *SCALE_REWARDS, True, False):
        raise HypotrackError(f"{arm} arm: scale_rewards must be one of {', '.join(SCALE_REWARDS)}")


def pool_key(specs: list[ArmSpec]) -> str:
    """The arms apart from their seeds: tests of a hypothesis with the same key add their seeds up."""
    arms = {s.arm: s.config_for_hash() | {"arm": s.arm} for s in specs}
    payload = json.dumps([arms[a] for a in sorted(arms)], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def config_hash(specs: list[ArmSpec]) -> str:
    payload = json.dumps([s.config_for_hash() | {"arm": s.arm} for s in specs], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]
