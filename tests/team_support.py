"""One tiny `hypotrack run` through a given launcher, read back from the registry and MLflow.

The launcher tests compare the python launcher's run (a session fixture in conftest.py,
trained once) with the accelerate and Ray launchers' runs of the same hypothesis and seed.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from runner_support import cli, env_for, registry_rows

# h06's control arm only (the user's LoRA run): the hypothesis reads its signature there, and one arm
# keeps three launchers' worth of training short on 2 cores.
LAUNCHER_RUN = ["run", "h06", "--arms", "control", "--seeds", "1", "--max-steps", "3", "--batch-size", "8",
                "--num-generations", "4"]


@dataclass
class LauncherRun:
    result: subprocess.CompletedProcess
    outputs: Path
    verdict: str
    arm_runs: list  # mlflow Run objects of the arms
    rewards: dict[str, list[tuple[int, float]]]  # "arm/seed" -> [(step, reward)]
    metric_keys: dict[str, set[str]]


def run_with(tmp: Path, cache: Path, *launcher_args: str) -> LauncherRun:
    from mlflow import MlflowClient

    env = env_for(tmp, cache)
    outputs = tmp / "outputs"
    result = cli([*LAUNCHER_RUN, *launcher_args, "--output-dir", str(outputs)], env, tmp, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    (verdict, parent_id) = registry_rows(tmp / "registry.db", "select verdict, mlflow_parent_run_id from test_run")[0]
    client = MlflowClient(f"sqlite:///{tmp / 'mlflow.db'}")
    parent = client.get_run(parent_id)
    arm_runs = client.search_runs([parent.info.experiment_id], f"tags.`mlflow.parentRunId` = '{parent_id}'")
    rewards, keys = {}, {}
    for run in arm_runs:
        key = f"{run.data.tags['hypotrack.arm']}/{run.data.tags['hypotrack.seed']}"
        rewards[key] = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, "reward"))
        keys[key] = set(run.data.metrics)
    return LauncherRun(result, outputs, verdict, arm_runs, rewards, keys)
