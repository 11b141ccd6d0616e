"""What a test records in MLflow besides the streamed metrics: the plan, each arm's inputs and files, the outcome.

What a user sees in the MLflow UI follows from it: every run says what it is in its description (the
nested runs: arm, what it changes, seed, test; the parent: the verdict headline and the treatment in
words), each arm run lists the data it trained on as a dataset input, and the parent run carries the
arms compared per step (`arms/outcome|signature/<metric>/control|treatment|delta`, means over seeds),
so its charts show the comparison without expanding the nested runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypotrack.mlflow_names import Tags, command_line
from hypotrack.run.plan import config_hash

if TYPE_CHECKING:
    from hypotrack.protocol import ArmSpec
    from hypotrack.run.workers import ArmState
    from hypotrack.spec.models import Hypothesis
    from hypotrack.verdict import Verdict

# The parent run's per-step comparison, in the verdict's two questions: the outcome (these rewards, when
# the arms log them, and the metric the treatment effect is measured on) and the signature (the metrics
# the hypothesis's criteria read). Each as arms/<question>/<metric>/<arm>, and .../delta (treatment minus
# control, paired by seed). MLflow's chart view makes one section per metric with the arms side by
# side, sections in alphabetical order: "outcome" comes first.
OUTCOME_METRICS = ("reward", "task_reward")
ARM_SERIES_PREFIX = "arms"
# ArmSpec fields that say where and how a worker runs, not what it trains.
NOT_A_SETTING = {"hypothesis_id", "test_id", "arm", "seed", "output_dir", "threads", "experiment_dir"}

# The GRPOConfig fields logged as parameters of each arm run (the whole resolved config is an artifact).
INTERESTING_GRPO = {
    "learning_rate", "per_device_train_batch_size", "num_generations", "max_completion_length", "temperature",
    "beta", "loss_type", "scale_rewards", "epsilon", "epsilon_high", "num_iterations", "gradient_accumulation_steps",
    "max_steps", "seed", "reward_weights", "mask_truncated_completions", "top_p", "top_k", "use_vllm",
    "importance_sampling_level", "lr_scheduler_type", "warmup_ratio", "weight_decay", "max_grad_norm",
}


def log_plan(tracker, parent_id: str, hypothesis: "Hypothesis", hypothesis_file: Path, arms: list["ArmState"],  # noqa: ANN001
             digest: str, flags: dict, launcher: str) -> None:
    changes = treatment_changes([a.spec for a in arms])
    experiment = arms[0].spec.experiment_name if arms else hypothesis.experiment  # no arms: nothing applies
    tracker.log_params(parent_id, {
        "hypothesis": hypothesis.id, "title": hypothesis.title, "experiment": experiment,
        "config_hash": digest, "arms": sorted({a.spec.arm for a in arms}), "seeds": sorted({a.spec.seed for a in arms}),
        "flags": flags, "launcher": launcher, "treatment": "; ".join(changes) if changes else "none",
    })
    tracker.set_tags(parent_id, {Tags.NOTE: parent_description(hypothesis, arms, "**Running**")})
    for arm in arms:
        tracker.set_tags(arm.run_id, {Tags.NOTE: arm_description(hypothesis, arm.spec, arms)})
    tracker.log_artifact(parent_id, hypothesis_file, "hypothesis")
    tracker.log_dict(parent_id, {a.spec.key: a.spec.model_dump() for a in arms}, "resolved/arms.json")
    for arm in arms:
        spec = arm.spec
        params = {"arm": spec.arm, "seed": spec.seed, "model": spec.model, "rewards": spec.rewards,
                  "peft": spec.peft, "max_steps": spec.max_steps, "hooks": spec.hooks,
                  "plant": spec.plant, "data": spec.data, "config_hash": config_hash([spec])}
        params.update({f"grpo.{k}": v for k, v in spec.grpo.items()})
        if spec.peft:
            params.update({f"lora.{k}": v for k, v in spec.lora.items() if k != "enabled"})
        tracker.log_params(arm.run_id, params)


def upload_arm(tracker, run_id: str, arm_dir: Path) -> None:  # noqa: ANN001
    """An ended arm's files: the samples table, diagnostics artifacts, its spec, log, events and traceback."""
    artifacts = arm_dir / "artifacts"
    samples = artifacts / "samples.json"
    if samples.exists():
        try:
            tracker.log_table(run_id, json.loads(samples.read_text()), "samples.json")
        except Exception as exc:  # noqa: BLE001 - a table is a nice-to-have
            tracker.set_tags(run_id, {Tags.SAMPLES_ERROR: str(exc)[:500]})
    for path in sorted(artifacts.glob("*")) if artifacts.is_dir() else []:
        if path.name != "samples.json":
            tracker.log_artifact(run_id, path, "diagnostics" if path.suffix in (".html", ".png") else "outputs")
    tracker.log_artifact(run_id, arm_dir / "spec.json", "resolved")
    for name in ("worker.log", "events.jsonl", "traceback.txt"):
        tracker.log_artifact(run_id, arm_dir / name)


def log_outcome(tracker, parent_id: str, arms: list["ArmState"], verdict: "Verdict", out_root: Path) -> None:  # noqa: ANN001
    from hypotrack.run.plots import reward_curves

    run_ids = {arm.spec.key: arm.run_id for arm in arms}
    tracker.log_dict(parent_id, verdict.evidence(run_ids), "verdict.json")
    tracker.set_tags(parent_id, {Tags.VERDICT: verdict.status,
                                 Tags.CONFIDENCE: verdict.confidence if verdict.confidence is not None else "",
                                 Tags.NOTE: outcome_description(tracker.tag(parent_id, Tags.NOTE), verdict)})
    if verdict.confidence is not None:
        tracker.log_metrics(parent_id, {"verdict_confidence": verdict.confidence}, 0)
    for question, metrics in compared_metrics(verdict).items():
        log_arm_series(tracker, parent_id, arms, metrics, f"{ARM_SERIES_PREFIX}/{question}")
    tracker.gather_datasets(parent_id, [arm.run_id for arm in arms if arm.run_id])
    out_root.mkdir(parents=True, exist_ok=True)
    figure = reward_curves(arms)
    if figure is not None:
        tracker.log_figure(parent_id, figure, "reward_curves.png")
        figure.savefig(out_root / "reward_curves.png", dpi=110)
        import matplotlib.pyplot as plt

        plt.close(figure)
    (out_root / "verdict.json").write_text(json.dumps(verdict.evidence(run_ids), indent=1))


# ------------------------------------------------------------------ what each run is, in words


def treatment_changes(specs: list["ArmSpec"]) -> list[str]:
    """Every setting the treatment arm changes from control, in words ([] without both arms)."""
    control = next((s for s in specs if s.arm == "control"), None)
    treatment = next((s for s in specs if s.arm == "treatment"), None)
    if control is None or treatment is None:
        return []
    return spec_changes(control, treatment)


def spec_changes(control: "ArmSpec", other: "ArmSpec") -> list[str]:
    """What `other` trains differently from `control`: `learning_rate 0.005 -> 0.0003`, `full fine-tuning
    instead of LoRA` (the adapters' own settings are left out when one side has none)."""
    before, after = _flat(control.model_dump(exclude=NOT_A_SETTING)), _flat(other.model_dump(exclude=NOT_A_SETTING))
    lora_on = {control.peft, other.peft}
    changes = []
    if lora_on == {True, False}:
        changes.append("full fine-tuning instead of LoRA" if control.peft else "LoRA instead of full fine-tuning")
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key), after.get(key)
        if old == new or key == "lora.enabled" or (key.startswith("lora.") and len(lora_on) > 1):
            continue
        name = key.removeprefix("grpo.")  # GRPOConfig fields read best under their own names
        if key == "plant":
            changes.append(f"planted fault {', '.join(new) or 'none'}")
        else:
            changes.append(f"{name} {_value(old)} -> {_value(new)}")
    return changes


def arm_description(hypothesis: "Hypothesis", spec: "ArmSpec", arms: list["ArmState"]) -> str:
    """A nested run's description: which arm, what it changes, seed, test."""
    what = f"**{spec.arm}** arm of {hypothesis.id} ({hypothesis.title}), seed {spec.seed}, test {spec.test_id}."
    control = next((a.spec for a in arms if a.spec.arm == "control"), None)
    if spec.arm == "control":
        what += f" The user's run: experiment `{spec.experiment_name}` as declared."
    elif control is not None:
        changes = spec_changes(control, spec)
        what += f" Changes from control: {'; '.join(changes) if changes else 'nothing'}."
    else:
        what += f" Experiment `{spec.experiment_name}` with the hypothesis's treatment."
    lines = [what]  # one paragraph: the UI folds long descriptions after the first
    if spec.plant:
        lines.append(f"Planted fault (both arms): {', '.join(spec.plant)}.")
    lines.append("The parent run holds the verdict and the arms compared.")
    return "\n\n".join(lines)


def parent_description(hypothesis: "Hypothesis", arms: list["ArmState"], headline: str) -> str:
    """The parent run's description: headline, then the comparison the test makes and the command."""
    specs = [a.spec for a in arms]
    title = f"{headline}: {hypothesis.id} {hypothesis.title}"
    if not specs:  # the run does not meet the hypothesis's requirements: the verdict says which
        return "\n\n".join([title, "No arm trained.", f"`{command_line()}`."])
    changes = treatment_changes(specs)
    seeds = ", ".join(str(s) for s in sorted({s.seed for s in specs}))
    arm_names = sorted({s.arm for s in specs})
    comparison = (f"**Treatment**: {'; '.join(changes) if changes else 'the same settings as control'}. "
                  f"**Control**: experiment `{specs[0].experiment_name}` as declared."
                  if len(arm_names) > 1 else f"Arm: {', '.join(arm_names)} of experiment `{specs[0].experiment_name}`.")
    return "\n\n".join([
        title,
        comparison,
        f"Seeds {seeds}; test {specs[0].test_id}; `{command_line()}`.",
        f"Charts: `{ARM_SERIES_PREFIX}/outcome/<metric>/...` (rewards) and `{ARM_SERIES_PREFIX}/signature/<metric>/...` "
        "(what the criteria read) compare `control`, `treatment` and `delta` (treatment minus control, paired by "
        "seed), each a mean over seeds; the nested runs hold each seed.",
    ])


def outcome_description(plan_description: str | None, verdict: "Verdict") -> str:
    """The plan's description with the verdict as its headline, and the verdict's summary after the
    comparison (the UI folds long descriptions: the headline and the treatment stay in view)."""
    confidence = f", confidence {verdict.confidence:.2f}" if verdict.confidence is not None else ""
    headline = f"**{verdict.status.capitalize()}**{confidence}"
    parts = (plan_description or "").split("\n\n")
    title = parts[0].split(": ", 1)[1] if ": " in parts[0] else ""
    return "\n\n".join([f"{headline}: {title}".rstrip(": "), *parts[1:2], verdict.summary, *parts[2:]])


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _value(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else json.dumps(value, default=str)


# ------------------------------------------------------------------ the arms compared on the parent run


def compared_metrics(verdict: "Verdict") -> dict[str, list[str]]:
    """{"outcome": the rewards and the effect's metric, "signature": the metrics the criteria read}, each once."""
    effect = getattr(verdict, "effect", None)  # a verdict without a treatment effect has none
    outcome = list(dict.fromkeys(name for name in (*OUTCOME_METRICS, getattr(effect, "metric", None)) if name))
    signature = [name for name in dict.fromkeys(r.criterion.metric for r in verdict.results) if name not in outcome]
    return {"outcome": outcome, "signature": signature}


def log_arm_series(tracker, parent_id: str, arms: list["ArmState"], metrics: list[str], prefix: str) -> None:  # noqa: ANN001
    """Per step, each arm's mean over seeds (and treatment minus control) as the parent run's own metrics:
    `<prefix>/<metric>/<arm>` and `<prefix>/<metric>/delta`."""
    from hypotrack.run.plots import arm_means, paired_delta

    by_step: dict[int, dict[str, float]] = {}
    for metric in metrics:
        for arm, curve in arm_means(arms, metric).items():
            for point in curve:
                by_step.setdefault(point.step, {})[f"{prefix}/{metric}/{arm}"] = point.mean
        for step, value in paired_delta(arms, metric):
            by_step.setdefault(step, {})[f"{prefix}/{metric}/delta"] = value
    for step, values in sorted(by_step.items()):
        tracker.log_metrics(parent_id, values, step)


# ------------------------------------------------------------------ what an arm trained on


def log_training_inputs(tracker, run_id: str, spec: "ArmSpec", event: dict[str, Any]) -> None:  # noqa: ANN001
    """The arm's training data as an MLflow dataset input, and the folder its model was loaded from."""
    name, source_type, source = dataset_source(spec.data, spec.seed)
    digest = str(event.get("dataset_digest") or config_hash([spec])[:16])
    tracker.log_dataset(run_id, name, digest, source_type, source, event.get("dataset_rows"),
                        event.get("dataset_columns"))
    if event.get("model_source"):
        tracker.log_params(run_id, {"model_source": event["model_source"]})


def dataset_source(data: dict[str, Any], seed: int) -> tuple[str, str, dict[str, Any]]:
    """(name, MLflow source type, source) of an experiment's data section, in MLflow's own source formats."""
    if data.get("task"):
        return (f"toy-{data['task']}", "code",
                {"tags": {"generator": "hypotrack.toy.lab", "task": data["task"], "seed": str(seed)}})
    if data.get("loader"):
        return data["loader"], "code", {"tags": {"loader": data["loader"], "seed": str(seed)}}
    spec = str(data.get("dataset") or "")
    path, config, split = ([*spec.split(","), "", ""])[:3]
    local = Path(path).expanduser()
    if local.is_dir():
        return local.name, "local", {"uri": str(local.resolve())}
    return (path if not config else f"{path}/{config}", "hugging_face",
            {"path": path, "config_name": config or None, "split": split or "train"})
