"""`--launcher ray` on a local Ray instance: the same training as the python launcher, streamed back;
an interrupted runner cancels its tasks and ends every MLflow run KILLED.

The runner never reads the Ray node's disk: events come back through the task's stream and the
arm's files at its end, the path a remote cluster takes too.
"""

from __future__ import annotations

import importlib.util
import signal
from pathlib import Path

import pytest
from runner_support import alive, env_for, mlflow_runs, registry_rows, start_cli, wait_for_step
from team_support import run_with

pytestmark = [pytest.mark.slow, pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                                   reason='Ray is not installed (pip install "hypotrack[ray]")')]


def test_ray_trains_like_the_python_launcher(tmp_path: Path, toy_cache: Path, python_launcher_run) -> None:
    ray_run = run_with(tmp_path, toy_cache, "--launcher", "ray")
    assert ray_run.verdict == python_launcher_run.verdict
    assert ray_run.rewards == python_launcher_run.rewards  # step by step, bit for bit: same worker, same seed
    assert len(ray_run.rewards["control/0"]) == 3
    assert ray_run.metric_keys == python_launcher_run.metric_keys
    # The arm folder on the runner's side is whole: streamed events, the log and artifacts the task returned.
    arm = next(ray_run.outputs.glob("h06-*/control-seed0"))
    assert {"events.jsonl", "worker.log", "spec.json"} <= {p.name for p in arm.iterdir()}
    assert (arm / "artifacts" / "samples.json").is_file()
    assert all(run.info.status == "FINISHED" for run in ray_run.arm_runs)


def test_interrupt_cancels_ray_tasks_and_ends_runs_killed(tmp_path: Path, toy_cache: Path) -> None:
    env = env_for(tmp_path, toy_cache)
    runner = start_cli(["run", "h01", "--arms", "control", "--seeds", "2", "--max-steps", "400", "--batch-size", "8",
                        "--num-generations", "4", "--launcher", "ray", "--output-dir", str(tmp_path / "outputs")],
                       env, tmp_path)
    pids = wait_for_step(tmp_path / "outputs", 1, timeout=300)  # the workers' pids, from their streamed events
    runner.send_signal(signal.SIGTERM)  # the signal Ray's own head node would otherwise take over
    output, _ = runner.communicate(timeout=120)
    assert runner.returncode == 130, output
    assert "Traceback" not in output
    assert pids and all(not alive(pid) for pid in pids.values()), "a cancelled task left its worker running"
    db = tmp_path / "registry.db"
    assert registry_rows(db, "select state from test_run") == [("killed",)]
    assert registry_rows(db, "select status from hypothesis_state where id='h01'") == [("pending",)]
    runs = mlflow_runs(tmp_path)
    assert len(runs) == 3 and all(r.info.status == "KILLED" for r in runs), \
        [(r.data.tags.get("hypotrack.kind"), r.info.status) for r in runs]
