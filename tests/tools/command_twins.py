"""The user-side suite through command experiments: the same verdicts as the YAML experiments?

Each case is a user-side experiment (tests/user_side/experiments/NAME.yaml) tested by one hypothesis
twice: as the YAML experiment (hypotrack's worker builds the run) and as a command experiment that runs
tests/user_script/train_user_side.py, a plain TRL script of the same run, with the treatments mapped to
its flags. Both at the same seeds, into one registry and MLflow store; then per arm the start-up
(process start to its first logged step) and the step time, from MLflow's own timestamps.

    python tests/tools/command_twins.py --seeds 2
    python tests/tools/command_twins.py --seeds 1 --cases healthy_sums:h01 --steps 20   # overhead only
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

TESTS = Path(__file__).resolve().parents[1]
EXPERIMENTS = TESTS / "user_side" / "experiments"
SCRIPT = TESTS / "user_script" / "train_user_side.py"
CASES = ("bf16_reward_model:h01,overweighted_kl:h03,flaky_judge:h05,out_of_reach:h11,wrong_sign_grade:h13,"
         "near_greedy:h15,judge_hacked:h17,repetition_penalty:h14,healthy_sums:h05")
TREATMENTS = {
    "kl_beta": "--set beta={value}", "scale_rewards": "--set scale_rewards={value}", "peft": {False: "--no-peft"},
    "learning_rate_factor": "--set learning_rate={value}", "num_generations_factor": "--generations-factor {factor}",
    "max_completion_length_factor": "--set max_completion_length={value}",
    "task_reward_only": {True: "--task-reward-only"}, "truncate_prompts": {False: "--no-truncation"},
    "plain_sampling": {True: "--set temperature=1.0 --set top_p=1.0 --set top_k=0 --set repetition_penalty=1.0"},
    "set": {"temperature": "--set temperature={value}"},
}


def twin(name: str, folder: Path) -> Path:
    """The command experiment of user-side experiment ``name``."""
    spec = yaml.safe_load((EXPERIMENTS / f"{name}.yaml").read_text())
    names = [path.split(":")[-1] for path in spec["rewards"]]
    task = (spec.get("task_reward") or spec["rewards"][0]).split(":")[-1]
    command = {"run": f"{sys.executable} {SCRIPT} --experiment {name}", "seed": "--seed {value}",
               "max_steps": "--max-steps {value}", "output_dir": "--output-dir {value}", "treatments": TREATMENTS,
               "reward_functions": names}
    if spec["data"].get("reference_column"):
        command["reference_column"] = spec["data"]["reference_column"]
    doc = {"name": f"{name}_command", "command": command, "task_reward": task, "settings": spec.get("settings", {}),
           "lora": {"enabled": spec.get("lora", {}).get("enabled", True)}, "seeds": spec["seeds"],
           "max_steps": spec["max_steps"]}
    path = folder / f"{name}_command.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def timings(tracker, run_ids: list[str]) -> tuple[list[float], list[float]]:
    """Start-up (run start to the first step's metric) and mean step time of each arm run, in seconds."""
    client = tracker.client
    startup, step = [], []
    for run_id in run_ids:
        run = client.get_run(run_id)
        points = sorted((m.step, m.timestamp) for m in client.get_metric_history(run_id, "reward"))
        points = [p for p in points if p[0] > 0]
        if len(points) < 2:
            continue
        startup.append((points[0][1] - run.info.start_time) / 1000)
        step.append((points[-1][1] - points[0][1]) / 1000 / (points[-1][0] - points[0][0]))
    return startup, step


def main() -> None:
    from hypotrack.definitions import Project, load_library
    from hypotrack.registry import open_registry
    from hypotrack.run.api import RunOptions, prepare_test, run_prepared
    from hypotrack.tracking import Tracker

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=None, help="training steps [each experiment's own]")
    parser.add_argument("--cases", default=CASES)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="command-twins-"))
    out.mkdir(parents=True, exist_ok=True)
    library = load_library(Project(TESTS / "user_side"))
    registry = open_registry(f"sqlite:///{out / 'registry.db'}")
    tracker = Tracker(f"sqlite:///{out / 'mlflow.db'}")
    options = RunOptions(tracking_uri=f"sqlite:///{out / 'mlflow.db'}", output_dir=out / "runs", parallel=2)
    settings = {"max_steps": args.steps} if args.steps else {}
    same = 0
    rows, clocks = [], {"yaml": ([], []), "command": ([], [])}
    for case in args.cases.split(","):
        name, hypothesis = case.split(":")
        verdicts = {}
        for kind, path in (("yaml", EXPERIMENTS / f"{name}.yaml"), ("command", twin(name, out))):
            started = time.time()
            plan = prepare_test(library, hypothesis, experiment=str(path), seeds=args.seeds, settings=dict(settings))
            outcome = run_prepared(plan, registry, options)
            verdicts[kind] = outcome.verdict
            arms = [arm.run_id for arm in outcome.arms if arm.status == "finished"]
            for bucket, values in zip(clocks[kind], timings(tracker, arms)):
                bucket.extend(values)
            print(f"   {name}/{hypothesis} {kind}: {outcome.verdict.headline} ({time.time() - started:.0f} s)",
                  flush=True)
        agree = verdicts["yaml"].status == verdicts["command"].status
        same += agree
        rows.append(f"| {name} | {hypothesis} | {verdicts['yaml'].status} | {verdicts['command'].status} | "
                    f"{'same' if agree else 'DIFFERENT'} |")
    print("\n| run | hypothesis | YAML experiment | command experiment | |\n|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"\nsame status on {same}/{len(rows)} cases")
    for kind, (startup, step) in clocks.items():
        if startup:
            print(f"{kind:8} arms: start-up median {statistics.median(startup):.1f} s, step median "
                  f"{statistics.median(step) * 1000:.0f} ms ({len(startup)} arms)")
    print(f"registry {out / 'registry.db'}")


if __name__ == "__main__":
    main()
