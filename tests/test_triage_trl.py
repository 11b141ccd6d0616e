"""Triage on logs TRL itself wrote: GRPOTrainer's trainer_state.json, and transformers' MLflow callback.

The runs are plain TRL on the toy lab (tests/triage_plain_trl.py): TRL's GRPOTrainer, the toy model,
its dataset and reward functions, with a planted fault carried the way a user's setup would carry it
(a reward function with numeric noise, a coin-flip auxiliary judge); hypotrack's trainer and hooks
never run. All three runs train in one subprocess, once per session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
STEPS = 6
MARKER = "@@plain-trl-run@@"  # tests/triage_plain_trl.py's result lines


@pytest.fixture(scope="session")
def plain_runs(tmp_path_factory, toy_cache: Path) -> dict:
    """{fault: {"output_dir", "mlflow_run_id"}} and the tracking URI the MLflow run went to."""
    out = tmp_path_factory.mktemp("plain-trl")
    uri = f"sqlite:///{out / 'mlflow.db'}"
    env = {**os.environ, "HYPOTRACK_CACHE": str(toy_cache), "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore",
           "MLFLOW_TRACKING_URI": uri, "MLFLOW_EXPERIMENT_NAME": "plain-trl", "DISABLE_MLFLOW_INTEGRATION": "FALSE"}
    # The two trainings run side by side: each spends most of its time importing on one core.
    started = [subprocess.Popen([sys.executable, str(HERE / "triage_plain_trl.py"), str(out), *faults, "--steps",
                                 str(STEPS), "--report-to", report_to], env=env, cwd=out, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
               for report_to, faults in (("none", ["clean", "tiny_std_rewards"]), ("mlflow", ["noisy_reward_component"]))]
    runs = {}
    for process in started:
        stdout, stderr = process.communicate(timeout=900)
        assert process.returncode == 0, stderr[-3000:]
        for line in stdout.splitlines():
            if line.startswith(MARKER):
                run = json.loads(line[len(MARKER):])
                runs[run["fault"]] = run
    return {"runs": runs, "uri": uri}


@pytest.fixture
def shipped_cli(run_cli, cli_env, shipped_project_dir):
    """The CLI on the hypotheses as shipped (the default test project freezes h01 and h06 for edit tests)."""
    env = {**cli_env, "HYPOTRACK_PROJECT": str(shipped_project_dir)}
    return lambda *args: run_cli(*args, env=env)


def _triage(cli, *args) -> dict:
    result = cli("triage", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_trainer_state_written_by_grpo_trainer(plain_runs, shipped_cli):
    runs = plain_runs["runs"]
    noisy = _triage(shipped_cli, runs["tiny_std_rewards"]["output_dir"])
    assert noisy["source"].endswith(f"checkpoint-{STEPS}/trainer_state.json")
    assert noisy["steps"] == STEPS and sorted(noisy["reward_functions"]) == ["arith_format", "jittered_correct"]
    top = noisy["ranking"][0]
    assert top["hypothesis"] == "h01" and top["suspect"], noisy["ranking"][:3]
    clean = _triage(shipped_cli, runs["clean"]["output_dir"])
    assert clean["suspects"] == [], [(e["hypothesis"], e["evidence"]) for e in clean["ranking"][:3]]
    said = " ".join(clean["expected"])
    assert "kl is not logged" in said and "clip_ratio/* are 0" in said  # beta 0, one iteration per batch


@pytest.mark.slow
def test_mlflow_run_logged_by_trls_callback(plain_runs, shipped_cli):
    run_id = plain_runs["runs"]["noisy_reward_component"]["mlflow_run_id"]
    assert run_id
    by_uri = _triage(shipped_cli, f"runs:/{run_id}", "--tracking-uri", plain_runs["uri"])
    assert by_uri["kind"] == "mlflow" and by_uri["steps"] == STEPS
    assert any("the run's reward_weights" in said for said in by_uri["assumed"]), by_uri["assumed"]
    assert by_uri["ranking"][0]["hypothesis"] == "h05" and by_uri["ranking"][0]["suspect"]
    # Both functions' names say correctness and their weights are equal, so the inferred task is whichever scored
    # further below its own best in this training: naming that one by its log key changes nothing, naming it is said
    inferred = by_uri["task_reward"]
    assert inferred in ("arith_correct", "coin_flip_judge") and "{" not in " ".join(by_uri["assumed"])
    by_id = _triage(shipped_cli, run_id, "--tracking-uri", plain_runs["uri"], "--task-reward", f"rewards/{inferred}/mean")
    assert by_id["task_reward"] == inferred and f"task reward: {inferred} (named by --task-reward)" in by_id["assumed"]
    assert [e["hypothesis"] for e in by_id["ranking"]] == [e["hypothesis"] for e in by_uri["ranking"]]
    # the ranking is in the registry: `next` starts from it
    nxt = shipped_cli("next", "--json")
    assert json.loads(nxt.stdout)["next"] == "h05" and json.loads(nxt.stdout)["triage"]["id"] == by_id["id"]
