"""`--launcher accelerate --processes 2` on CPU: one arm trained by two gloo ranks, recorded like any arm.

Rank 0 streams the events (TRL gathers its own metrics over the ranks; the hooks' diagnostics
are rank 0's share of the rollout), so the arm has one MLflow run with the python launcher's
metric keys and the hypothesis gets the same verdict.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from team_support import run_with

pytestmark = pytest.mark.slow


def test_two_cpu_processes_per_arm_record_like_the_python_launcher(tmp_path: Path, toy_cache: Path,
                                                                    python_launcher_run) -> None:
    run = run_with(tmp_path, toy_cache, "--launcher", "accelerate", "--processes", "2")
    assert len(run.arm_runs) == 1 and run.arm_runs[0].info.status == "FINISHED"  # one run per arm, not per rank
    assert run.verdict == python_launcher_run.verdict
    assert run.metric_keys == python_launcher_run.metric_keys
    assert [step for step, _ in run.rewards["control/0"]] == [1, 2, 3]
    arm = next(run.outputs.glob("h06-*/control-seed0"))
    # Both ranks trained; rank 1 kept its files apart and wrote no events.
    assert (arm / "rank1").is_dir() and not (arm / "rank1" / "events.jsonl").exists()
    assert (arm / "artifacts" / "samples.json").is_file()
    # TRL gathers its counters over the ranks: twice the python launcher's tokens for the same per-device batch.
    tokens = run.arm_runs[0].data.metrics["num_tokens"]
    assert tokens > 1.5 * python_launcher_run.arm_runs[0].data.metrics["num_tokens"]
