"""What a test records in MLflow besides the streamed metrics: the plan, each arm's files, the outcome."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from hypotrack.run.plan import config_hash
from hypotrack.tracking import Tags

if TYPE_CHECKING:
    from hypotrack.run.workers import ArmState
    from hypotrack.spec.models import Hypothesis
    from hypotrack.verdict import Verdict

# The GRPOConfig fields logged as parameters of each arm run (the whole resolved config is an artifact).
INTERESTING_GRPO = {
    "learning_rate", "per_device_train_batch_size", "num_generations", "max_completion_length", "temperature",
    "beta", "loss_type", "scale_rewards", "epsilon", "epsilon_high", "num_iterations", "gradient_accumulation_steps",
    "max_steps", "seed", "reward_weights", "mask_truncated_completions", "top_p", "top_k", "use_vllm",
    "importance_sampling_level", "lr_scheduler_type", "warmup_ratio", "weight_decay", "max_grad_norm",
}


def log_plan(tracker, parent_id: str, hypothesis: "Hypothesis", hypothesis_file: Path, arms: list["ArmState"],  # noqa: ANN001
             digest: str, flags: dict, launcher: str) -> None:
    tracker.log_params(parent_id, {
        "hypothesis": hypothesis.id, "title": hypothesis.title, "experiment": arms[0].spec.experiment_name,
        "config_hash": digest, "arms": sorted({a.spec.arm for a in arms}), "seeds": sorted({a.spec.seed for a in arms}),
        "flags": flags, "launcher": launcher,
    })
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
                                 Tags.NOTE: verdict.summary})
    if verdict.confidence is not None:
        tracker.log_metrics(parent_id, {"verdict_confidence": verdict.confidence}, 0)
    out_root.mkdir(parents=True, exist_ok=True)
    figure = reward_curves(arms)
    if figure is not None:
        tracker.log_figure(parent_id, figure, "reward_curves.png")
        figure.savefig(out_root / "reward_curves.png", dpi=110)
        import matplotlib.pyplot as plt

        plt.close(figure)
    (out_root / "verdict.json").write_text(json.dumps(verdict.evidence(run_ids), indent=1))
