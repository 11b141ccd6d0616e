"""`hypotrack.watch(trainer)` in a user's own script (tests/watch_user_script.py): real TRL runs on the toy model.

The script has its own GRPOTrainer subclass, data loader and reward names, and reports to MLflow
through TRL's own MLflow callback; each test runs it as the user would, in its own process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "watch_user_script.py"
MARKER = "@@watched-run@@"


def test_import_hypotrack_stays_light_and_watch_loads_on_use() -> None:
    code = ("import sys, hypotrack; assert 'torch' not in sys.modules, 'import hypotrack imported torch'; "
            "w = hypotrack.watch; assert callable(w) and 'torch' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def _env(tmp_path: Path, toy_cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYPOTRACK_", "MLFLOW_"))}
    env.update(HYPOTRACK_CACHE=str(toy_cache), HYPOTRACK_DB=str(tmp_path / "registry.db"),
               MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlflow.db'}", OMP_NUM_THREADS="1",
               PYTHONDONTWRITEBYTECODE="1")
    return env


def run_script(tmp_path: Path, toy_cache: Path, *args: str, expect_rc: int = 0,
               launcher: list[str] | None = None, env: dict[str, str] | None = None) -> tuple[list[dict], str]:
    """Every process's result line and the whole stderr."""
    command = [*(launcher or [sys.executable]), str(SCRIPT), str(tmp_path / "out"), *args]
    done = subprocess.run(command, capture_output=True, text=True, env={**_env(tmp_path, toy_cache), **(env or {})},
                          cwd=tmp_path, timeout=600)
    assert done.returncode == expect_rc, done.stderr[-4000:]
    # Processes under one launcher share the pipe: another rank's unfinished line may precede a result line, and
    # its output may follow the result on the same line, so each result is read up to the end of its JSON only.
    decoder = json.JSONDecoder()
    results = [decoder.raw_decode(line.split(MARKER, 1)[1])[0] for line in done.stdout.splitlines() if MARKER in line]
    assert results, done.stdout[-2000:]
    return results, done.stderr


def latest_triage(tmp_path: Path):
    from hypotrack.registry import open_registry
    from hypotrack.registry.queries import latest_triage as latest

    return latest(open_registry(f"sqlite:///{tmp_path / 'registry.db'}"), with_report=True)


def mlflow_runs(tmp_path: Path) -> list:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    return [run for exp in client.search_experiments() for run in client.search_runs([exp.experiment_id])]


@pytest.mark.slow
def test_a_watched_user_script_logs_diag_metrics_to_mlflow_and_records_its_triage(tmp_path: Path,
                                                                                  toy_cache: Path) -> None:
    [result], _ = run_script(tmp_path, toy_cache, "--hooks", "all", "--steps", "3")
    assert result["outcome"] == "finished" and result["failures"] == []
    assert result["rollouts"] == 3  # the user's own override of a wrapped seam still runs
    [run] = mlflow_runs(tmp_path)
    assert run.info.run_id == result["mlflow_run_id"]
    logged = set(run.data.metrics)
    # every hook's metrics arrived through TRL's MLflow callback, next to TRL's own keys
    for key in ("diag/gates/group_variance", "diag/advantages/abs_max", "diag/kl/k3_mean", "diag/lora_sync/lora_enabled",
                "diag/weights/grad_norm_total", "diag/reward_signal/exact_answer/mean", "reward", "entropy"):
        assert key in logged, (key, sorted(logged))
    triage = latest_triage(tmp_path)
    assert triage.source == str(tmp_path / "out" / "trainer_state.json") and triage.id == result["triage_id"]
    watched = triage.report["watch"]
    assert watched["outcome"] == "finished" and watched["report_to"] == ["mlflow"]
    assert "MyGRPOTrainer" in watched["trainer"] and "gates" in watched["hooks"]
    # triage read the hooks' diag/* keys (not set aside as unknown), so h06 is weighed on its own adapter evidence
    assert not [key for key in triage.report["ignored_keys"] if key.startswith("diag/")]
    assert [entry["hypothesis"] for entry in triage.ranking]


@pytest.mark.slow
def test_a_wrong_reference_is_stopped_at_step_1_and_the_run_is_recorded_as_stopped(tmp_path: Path,
                                                                                    toy_cache: Path) -> None:
    [result], stderr = run_script(tmp_path, toy_cache, "--fault", "wrong_reference", "--stop-on", "gates",
                                  "--steps", "6")
    assert result["global_step"] == 1 and result["outcome"] == "stopped"
    assert result["failures"] == [{"gate": "ref_kl", "hypothesis": "h18", "step": 1}]
    assert stderr.count("GateFailed: gate ref_kl failed at step 1 (points to h18)") == 1  # warned once, with numbers
    assert "reference's logprobs differ from the policy's by up to" in stderr
    [run] = mlflow_runs(tmp_path)
    assert run.info.status == "FINISHED" and run.data.metrics["diag/gates/stopped"] == 1.0  # a stop, not a crash
    watched = latest_triage(tmp_path).report["watch"]
    assert watched["outcome"] == "stopped" and watched["stopped_by"]["gate"] == "ref_kl"


@pytest.mark.slow
@pytest.mark.parametrize("fault, gate, hypothesis, step", [
    ("dropout_in_old_logps", "ratio", "h08", 1),
    ("frozen_lora_b", "grad", "h19", 1),
    ("own_checkpointing", "grad", "h19", 1),  # the final norm still trains: the share of weights reached shows it
    ("own_optimizer_before_peft", "moved", "h25", 1),
    ("sampling_temperature_not_scored", "parity", "h14", 1),
    ("lora_not_synced", "lora", "h06", 2),
])
def test_each_gate_stops_its_planted_fault(tmp_path: Path, toy_cache: Path, fault: str, gate: str, hypothesis: str,
                                           step: int) -> None:
    [result], _ = run_script(tmp_path, toy_cache, "--fault", fault, "--stop-on", hypothesis, "--steps", "5")
    # the grad and moved gates read the first step whose groups' rewards differ: step 1 or 2 as the toy model's
    # samples fall
    steps = (1, 2) if gate in ("grad", "moved") else (step,)
    [failure] = [f for f in result["failures"] if f["gate"] == gate]
    assert failure["hypothesis"] == hypothesis and failure["step"] in steps, result["failures"]
    assert result["outcome"] == "stopped" and result["global_step"] == failure["step"]


@pytest.mark.slow
def test_gates_stay_silent_on_a_clean_run_attached_as_a_callback(tmp_path: Path, toy_cache: Path) -> None:
    [result], stderr = run_script(tmp_path, toy_cache, "--callback", "--stop-on", "gates", "--steps", "4")
    assert result["failures"] == [] and result["outcome"] == "finished" and result["global_step"] == 4
    assert "GateFailed" not in stderr
    assert latest_triage(tmp_path).report["watch"]["hooks"] == ["gates"]


@pytest.mark.slow
def test_a_crashing_run_is_still_triaged_and_recorded(tmp_path: Path, toy_cache: Path) -> None:
    [result], stderr = run_script(tmp_path, toy_cache, "--fault", "crash", "--steps", "4", expect_rc=3)
    assert "grading service went away" in result["crashed"] and result["outcome"] == "crashed"
    triage = latest_triage(tmp_path)
    assert triage.id == result["triage_id"] and triage.report["watch"]["outcome"] == "crashed"
    assert triage.report["steps"] >= 1
    assert triage.report["watch"]["crash_cause"] is None  # a grading service's error names no cause


@pytest.mark.slow
def test_a_crash_whose_error_is_a_known_cause_names_its_hypothesis(tmp_path: Path, toy_cache: Path) -> None:
    [result], stderr = run_script(tmp_path, toy_cache, "--fault", "own_checkpointing_lora", "--steps", "2",
                                  expect_rc=3)
    assert "does not require grad" in result["crashed"] and result["outcome"] == "crashed"
    assert "this error is h19's cause: the loss reaches no trainable weight" in stderr
    # it crashed in its first backward pass: no step logged, so there is no run to triage and record
    assert result["triage_id"] is None and "no numeric metrics logged" in stderr


@pytest.mark.slow
def test_under_accelerate_two_cpu_processes_log_once_and_record_once(tmp_path: Path, toy_cache: Path) -> None:
    from hypotrack.ports import unclaimed_port

    launcher = [sys.executable, "-m", "accelerate.commands.launch", "--main_process_port", str(unclaimed_port()),
                "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--mixed_precision", "no",
                "--dynamo_backend", "no"]
    # accelerate's torchrun path over gloo, as hypotrack's accelerate launcher starts it on a CPU machine
    results, _ = run_script(tmp_path, toy_cache, "--hooks", "all", "--steps", "2", launcher=launcher,
                            env={"ACCELERATE_USE_CPU": "true"})
    assert sorted(r["process"] for r in results) == [0, 1]  # both ranks trained
    main, other = sorted(results, key=lambda r: r["process"])
    assert main["outcome"] == other["outcome"] == "finished" and main["global_step"] == other["global_step"] == 2
    assert main["triage_id"] and other["triage_id"] is None  # only the main process records
    [run] = mlflow_runs(tmp_path)  # TRL's MLflow callback logs from the main process only
    assert "diag/gates/group_variance" in run.data.metrics and "diag/kl/k3_mean" in run.data.metrics
    steps = sorted(m.step for m in _history(tmp_path, run.info.run_id, "diag/advantages/abs_max"))
    assert steps == [1, 2]  # one point per step, not one per process
    assert latest_triage(tmp_path).id == main["triage_id"]


def _history(tmp_path: Path, run_id: str, key: str) -> list:
    from mlflow import MlflowClient

    return MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").get_metric_history(run_id, key)
