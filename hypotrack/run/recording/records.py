"""What a test records in MLflow besides the streamed metrics: the plan, each arm's inputs and files, the outcome.

What a user sees in the MLflow UI follows from it: the experiment's description is the hypothesis's title
and statement; every run says what it is in its description (the nested runs: arm, what it changes, seed,
test; the parent: the verdict headline, the treatment in words and the evidence) and carries the verdict
headline as a tag; each arm run lists the data it trained on as a dataset input, has a short name and its
own start and end; and the experiment holds a saved view of each test (mlflow_ui.arms_view): the arm runs
grouped by arm, one chart per outcome and per metric the criteria read, both arms on each.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hypotrack.mlflow_names import Tags, command_line
from hypotrack.run.planning.plan import config_hash
from hypotrack.run.recording.mlflow_ui import arms_view, verdict_word, view_key

if TYPE_CHECKING:
    from hypotrack.definitions.models import Hypothesis
    from hypotrack.protocol import ArmSpec
    from hypotrack.run.arms import ArmState
    from hypotrack.tracking import Tracker
    from hypotrack.verdict import Verdict

# The arms compared, in the verdict's two questions: the outcome (these rewards, when the arms log them,
# and the metric the treatment effect is measured on) and the signature (the metrics the criteria read).
OUTCOME_METRICS = ("reward", "task_reward")
SHORT_ARM_NAMES = {"control": "ctrl", "treatment": "treat"}  # run names the runs list shows whole
# What the UI's markdown would take for markup in text hypotrack did not write (titles, statements, evidence):
# HTML-like <tags>, emphasis, code, links, tables. An underscore inside a word (reference_column) is no markup,
# and the experiments list shows descriptions as raw text: those stay as written.
MARKDOWN_SPECIAL = re.compile(r"([\\`*{}\[\]<>#|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
# ArmSpec fields that say where and how a worker runs, not what it trains.
NOT_A_SETTING = {"hypothesis_id", "test_id", "arm", "seed", "output_dir", "threads", "experiment_dir"}

# The GRPOConfig fields logged as parameters of each arm run (the whole resolved config is an artifact).
INTERESTING_GRPO = {
    "learning_rate", "per_device_train_batch_size", "num_generations", "max_completion_length", "temperature",
    "beta", "loss_type", "scale_rewards", "epsilon", "epsilon_high", "num_iterations", "gradient_accumulation_steps",
    "max_steps", "seed", "reward_weights", "mask_truncated_completions", "top_p", "top_k", "use_vllm",
    "importance_sampling_level", "lr_scheduler_type", "warmup_ratio", "weight_decay", "max_grad_norm",
}


def log_plan(tracker: Tracker, parent_id: str, hypothesis: "Hypothesis", hypothesis_file: Path, arms: list["ArmState"],
             digest: str, flags: dict, launcher: str) -> None:
    changes = treatment_changes([a.spec for a in arms])
    experiment = arms[0].spec.experiment_name if arms else hypothesis.experiment  # no arms: nothing applies
    tracker.log_params(parent_id, {
        "hypothesis": hypothesis.id, "title": hypothesis.title, "experiment": experiment,
        "config_hash": digest, "arms": sorted({a.spec.arm for a in arms}), "seeds": sorted({a.spec.seed for a in arms}),
        "flags": flags, "launcher": launcher, "treatment": "; ".join(changes) if changes else "none",
    })
    tracker.set_tags(parent_id, {Tags.NOTE: parent_description(hypothesis, arms, "**Running**")})
    experiment_id = tracker.experiment_of(parent_id)
    tracker.describe_experiment(experiment_id, experiment_description(hypothesis))
    for arm in arms:
        tracker.set_tags(arm.run_id, {Tags.NOTE: arm_description(hypothesis, arm.spec, arms)})
        tracker.rename_run(arm.run_id, short_name(arm.spec))
    if arms:
        criteria = [criterion.metric for _, _, criterion in hypothesis.criteria.all_criteria()]
        metrics = list(dict.fromkeys([*OUTCOME_METRICS, *criteria]))
        tracker.save_view(experiment_id, view_key(arms[0].spec.test_id), arms_view(arms[0].spec.test_id, metrics))
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


def upload_arm(tracker: Tracker, run_id: str, arm_dir: Path) -> None:
    """An ended arm's files: the samples table, diagnostics artifacts, its spec, log, events and traceback."""
    artifacts = arm_dir / "artifacts"
    samples = artifacts / "samples.json"
    if samples.exists():
        try:
            tracker.log_table(run_id, json.loads(samples.read_text()), "samples.json")
        except Exception as exc:  # noqa: BLE001 - a table is a nice-to-have
            tracker.set_tags(run_id, {Tags.SAMPLES_ERROR: str(exc)[:500]})
    for path in sorted(artifacts.glob("*")) if artifacts.is_dir() else []:
        if path.name not in ("samples.json", "grpo_config.json"):  # the config is logged as resolved/grpo_config.json
            tracker.log_artifact(run_id, path, "diagnostics" if path.suffix in (".html", ".png") else "outputs")
    tracker.log_artifact(run_id, arm_dir / "spec.json", "resolved")
    for name in ("worker.log", "events.jsonl", "traceback.txt"):
        tracker.log_artifact(run_id, arm_dir / name)


def log_outcome(tracker: Tracker, parent_id: str, arms: list["ArmState"], verdict: "Verdict", out_root: Path) -> None:
    from hypotrack.run.recording.plots import reward_curves

    run_ids = {arm.spec.key: arm.run_id for arm in arms}
    tracker.log_dict(parent_id, verdict.evidence(run_ids), "verdict.json")
    verdict_tags = {Tags.VERDICT: verdict_word(verdict.status), Tags.HEADLINE: headline(verdict),
                    Tags.CONFIDENCE: verdict.confidence if verdict.confidence is not None else ""}
    tracker.set_tags(parent_id, {**verdict_tags,
                                 Tags.NOTE: outcome_description(tracker.tag(parent_id, Tags.NOTE), verdict)})
    tracker.rename_run(parent_id, decided_name(tracker.tag(parent_id, Tags.HYPOTHESIS) or "", verdict,
                                               tracker.tag(parent_id, Tags.TEST) or ""))
    for arm in arms:  # each arm run shows the verdict too (the runs list groups them by arm)
        tracker.set_tags(arm.run_id, verdict_tags)
    if verdict.confidence is not None:
        tracker.log_metrics(parent_id, {"verdict_confidence": verdict.confidence}, 0)
    if arms:
        compared = compared_metrics(verdict)
        test_id = arms[0].spec.test_id
        tracker.save_view(tracker.experiment_of(parent_id), view_key(test_id),
                          arms_view(test_id, compared["outcome"] + compared["signature"]))
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


def escape_markdown(text: str) -> str:
    """Text shown as written in the UI's markdown (`reference_column: <column>` keeps its `<column>`)."""
    return MARKDOWN_SPECIAL.sub(r"\\\1", text)


def headline(verdict: "Verdict") -> str:
    """The verdict in one line (the runs list's column): the verdict's own headline, else its summary."""
    line = getattr(verdict, "headline", None) or verdict.summary
    word = verdict_word(verdict.status)
    return word + line[len(verdict.status):] if line.startswith(verdict.status) else line


def decided_name(hypothesis_id: str, verdict: "Verdict", test_id: str) -> str:
    """A decided test's run name, the verdict first so that the runs list shows it: `h06 invalidated 154bf2`."""
    return " ".join(part for part in (hypothesis_id, verdict_word(verdict.status), test_id[:6]) if part)


def short_name(spec: "ArmSpec") -> str:
    """An arm run's name, short enough for the runs list and a chart legend: `treat s1`."""
    return f"{SHORT_ARM_NAMES.get(spec.arm, spec.arm)} s{spec.seed}"


def experiment_description(hypothesis: "Hypothesis") -> str:
    """The hypothesis's title and statement: the experiments list and the experiment page show them."""
    return f"{hypothesis.id}: {escape_markdown(hypothesis.title)}\n\n{escape_markdown(hypothesis.statement.strip())}"


def arm_description(hypothesis: "Hypothesis", spec: "ArmSpec", arms: list["ArmState"]) -> str:
    """A nested run's description: which arm, what it changes, seed, test."""
    what = (f"**{spec.arm}** arm of {hypothesis.id} ({escape_markdown(hypothesis.title)}), seed {spec.seed}, "
            f"test {spec.test_id}.")
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
    title = f"{headline}: {hypothesis.id} {escape_markdown(hypothesis.title)}"
    if not specs:  # the run does not meet the hypothesis's requirements: the verdict says which
        return "\n\n".join([title, "No arm trained.", f"`{command_line()}`."])
    changes = treatment_changes(specs)
    seeds = ", ".join(str(s) for s in sorted({s.seed for s in specs}))
    arm_names = sorted({s.arm for s in specs})
    both = len(arm_names) > 1
    comparison = (f"**Treatment**: {'; '.join(changes) if changes else 'the same settings as control'}. "
                  f"**Control**: experiment `{specs[0].experiment_name}` as declared."
                  if both else f"Arm: {', '.join(arm_names)} of experiment `{specs[0].experiment_name}`.")
    charts = ("Charts: the experiment's view of this test (the link `hypotrack ui` prints) groups the arm runs by "
              "arm: each chart shows " + ("both arms, " if both else f"the {arm_names[0]} arm, ") +
              "the mean over seeds with the band from the lowest to the highest seed; the nested runs hold each seed.")
    return "\n\n".join([title, comparison, f"Seeds {seeds}; test {specs[0].test_id}; `{command_line()}`.", charts])


def outcome_description(plan_description: str | None, verdict: "Verdict") -> str:
    """The plan's description with the verdict as its headline, and the verdict's summary after the
    comparison (the UI folds long descriptions: the headline and the treatment stay in view)."""
    confidence = f", confidence {verdict.confidence:.2f}" if verdict.confidence is not None else ""
    status = f"**{verdict_word(verdict.status).capitalize()}**{confidence}"
    parts = (plan_description or "").split("\n\n")
    title = parts[0].split(": ", 1)[1] if ": " in parts[0] else ""
    # The one-line headline is the runs list's column; here the whole evidence, once.
    return "\n\n".join([f"{status}: {title}".rstrip(": "), *parts[1:2], escape_markdown(verdict.summary), *parts[2:]])


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


# ------------------------------------------------------------------ the arms compared


def compared_metrics(verdict: "Verdict") -> dict[str, list[str]]:
    """{"outcome": the rewards and the effect's metric, "signature": the metrics the criteria read}, each once."""
    effect = getattr(verdict, "effect", None)  # a verdict without a treatment effect has none
    outcome = list(dict.fromkeys(name for name in (*OUTCOME_METRICS, getattr(effect, "metric", None)) if name))
    signature = [name for name in dict.fromkeys(r.criterion.metric for r in verdict.results) if name not in outcome]
    return {"outcome": outcome, "signature": signature}


# ------------------------------------------------------------------ what an arm trained on


def log_training_inputs(tracker: Tracker, run_id: str, spec: "ArmSpec", event: dict[str, Any]) -> None:
    """The arm's training data as an MLflow dataset input, and the folder its model was loaded from."""
    if spec.command:  # the script loads its own data: the command that did is its source
        import shlex

        name, source_type, source = ("training command", "code",
                                     {"tags": {"command": shlex.join(spec.command)[:400], "seed": str(spec.seed)}})
    else:
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
