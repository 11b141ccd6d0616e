"""Real signals at a random step: nothing stays `testing`, no MLflow run is left FINISHED or RUNNING."""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import pytest
from runner_support import alive, cli, env_for, mlflow_runs, registry_rows, start_cli, wait_for_step

# Interrupts of two-arm runs, with the exact exit codes and MLflow states: they run with the interrupt
# matrix (tests/test_interrupt_matrix.py) in its own CI step, outside the default run's 15 minutes.
pytestmark = pytest.mark.interrupt_matrix

LONG = ["--seeds", "1", "--batch-size", "8", "--num-generations", "4", "--parallel", "2"]


def _start(tmp_path: Path, toy_cache: Path, max_steps: int = 400):
    env = env_for(tmp_path, toy_cache)
    args = [*LONG, "--max-steps", str(max_steps)]
    runner = start_cli(["run", "h01", *args, "--output-dir", str(tmp_path / "outputs")], env, tmp_path)
    step = random.randint(1, 4)
    pids = wait_for_step(tmp_path / "outputs", step)
    return env, runner, pids, step


def _wait_until(predicate, timeout: float = 60.0) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.3)
    return predicate()


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 130)])
def test_interrupt_stops_workers_and_records_killed(tmp_path: Path, toy_cache: Path, sig: int, code: int) -> None:
    env, runner, pids, step = _start(tmp_path, toy_cache)
    runner.send_signal(sig)
    output, _ = runner.communicate(timeout=90)
    assert runner.returncode == code, output
    assert "Traceback" not in output
    assert all(not alive(pid) for pid in pids.values()), f"workers left after {sig!r} at step {step}"
    db = tmp_path / "registry.db"
    assert registry_rows(db, "select state from test_run") == [("killed",)]
    assert registry_rows(db, "select status from hypothesis_state where id='h01'") == [("pending",)]
    statuses = {r.data.tags.get("hypotrack.kind"): r.info.status for r in mlflow_runs(tmp_path)}
    assert statuses == {"test": "KILLED", "arm": "KILLED"}, statuses
    assert all(r.info.status == "KILLED" for r in mlflow_runs(tmp_path))


def test_sigkill_of_runner_is_reconciled_by_the_next_command(tmp_path: Path, toy_cache: Path) -> None:
    env, runner, pids, step = _start(tmp_path, toy_cache)
    db = tmp_path / "registry.db"
    assert registry_rows(db, "select status from hypothesis_state where id='h01'") == [("testing",)]
    runner.send_signal(signal.SIGKILL)
    runner.communicate(timeout=30)
    # Workers get SIGTERM from the kernel when their parent dies (PR_SET_PDEATHSIG).
    assert _wait_until(lambda: all(not alive(pid) for pid in pids.values()), 60), "orphaned workers"
    result = cli(["status", "--json"], env, tmp_path)
    assert result.returncode == 0 and "had died" in result.stderr
    assert registry_rows(db, "select state from test_run") == [("killed",)]
    assert registry_rows(db, "select status from hypothesis_state where id='h01'") == [("pending",)]
    # The detached closer ends the MLflow runs the dead runner left RUNNING.
    assert _wait_until(lambda: all(r.info.status == "KILLED" for r in mlflow_runs(tmp_path)), 60), \
        [(r.data.tags.get("hypotrack.kind"), r.info.status) for r in mlflow_runs(tmp_path)]
    assert registry_rows(db, "select mlflow_closed from test_run") == [(1,)]


def test_sigkill_of_a_worker_fails_its_arm_and_the_test_is_inconclusive(tmp_path: Path, toy_cache: Path) -> None:
    # the surviving arm trains to its end: long enough to be killed mid-run, short enough not to wait on
    env, runner, pids, step = _start(tmp_path, toy_cache, max_steps=80)
    victim = sorted(pids)[0]  # control-seed0
    os.kill(pids[victim], signal.SIGKILL)
    output, _ = runner.communicate(timeout=300)
    assert runner.returncode == 1, output
    assert "inconclusive" in output and "code -9" in output
    db = tmp_path / "registry.db"
    assert registry_rows(db, "select state, verdict from test_run") == [("failed", "inconclusive")]
    assert registry_rows(db, "select status from hypothesis_state where id='h01'") == [("inconclusive",)]
    statuses = {r.data.tags.get("hypotrack.arm"): r.info.status for r in mlflow_runs(tmp_path)
                if r.data.tags.get("hypotrack.kind") == "arm"}
    assert statuses["control"] == "FAILED" and statuses["treatment"] == "FINISHED"
    parent = [r for r in mlflow_runs(tmp_path) if r.data.tags.get("hypotrack.kind") == "test"][0]
    assert parent.info.status == "FAILED"
