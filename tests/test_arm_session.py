"""One door into TRL: every arm's trainer gets the same session, whoever built the trainer.

A worker arm of experiments/toy_arith.yaml and a command arm of the same run written as a user's script
(tests/user_script/train_toy_arith.py) record the same events, metrics and files; a command arm gets the
worker's guards; one module names TRL's private members; the reward functions get their layers in one order.
Real runs of the toy model through the CLI, real registry and MLflow stores.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from runner_support import cli, env_for

from hypotrack.session.reward_functions import is_async
from hypotrack.session.trl_seams import Seam

PACKAGE = Path(__file__).resolve().parents[1] / "hypotrack"
SCRIPT = Path(__file__).parent / "user_script" / "toy_arith_script.yaml"
# TRL's private members hypotrack reads or writes besides the seams' methods
PRIVATE_MEMBERS = ("_metrics", "_last_loaded_step")


def test_one_module_names_trls_private_members() -> None:
    """A TRL upgrade that moves a seam is followed in session/trl_seams.py and nowhere else."""
    names = [seam.value for seam in Seam if seam.value.startswith("_")] + list(PRIVATE_MEMBERS)
    pattern = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9_])")
    naming = sorted({str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py") if pattern.search(path.read_text())})
    assert naming == ["session/trl_seams.py"]


def test_reward_functions_are_layered_faults_then_treatments_then_counting() -> None:
    from hypotrack.faults.manifest import build_faults
    from hypotrack.session import ArmSession
    from hypotrack.treatments.manifest import build_treatments

    calls: list[str] = []

    def exact(completions, **kwargs):
        calls.append("user")
        return [1.0 for _ in completions]

    session = ArmSession(faults=build_faults(["reward_never_matches"]),
                         treatments=build_treatments(["retry_failed_rewards"]))
    (layered,) = session.reward_functions([exact], task_index=0)
    assert layered.__name__ == "exact"
    assert layered(completions=["1", "2"]) == [0.0, 0.0]  # the fault is inside: it scores 0, whatever the user's says
    assert session.reward_errors.calls["exact"] == 1  # counted once per call from TRL, retries inside it
    assert session.reward_functions([layered], task_index=0) == [layered]  # layered once


def test_a_raising_reward_is_counted_and_an_async_one_stays_async() -> None:
    from hypotrack.session import ArmSession

    def judge(completions, **kwargs):
        raise TimeoutError("the judge did not answer")

    async def remote(completions, **kwargs):
        return [0.5 for _ in completions]

    session = ArmSession()
    counted_judge, counted_remote = session.reward_functions([judge, remote], task_index=0)
    assert counted_judge(completions=["a", "b"]) == [None, None]
    assert session.reward_errors.total["judge"] == 1 and "TimeoutError" in session.reward_errors.first_message["judge"]
    assert is_async(counted_remote)  # TRL awaits it on its event loop, as it would the user's function
    assert asyncio.run(counted_remote(completions=["a"])) == [0.5]
    assert session.reward_errors.scored["remote"] == 1


def _events(arm_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (arm_dir / "events.jsonl").read_text().splitlines() if line.strip()]


def _record(outputs: Path) -> dict:
    """What one control arm recorded: its event kinds, CONFIG keys, metric keys and files."""
    (arm_dir,) = [p for p in outputs.glob("*/*") if (p / "events.jsonl").exists()]
    events = _events(arm_dir)
    metrics = set().union(*(e["metrics"] for e in events if e["event"] == "metrics"))
    config = next(e for e in events if e["event"] == "config")
    losses = [e["metrics"]["train_loss"] for e in events if e["event"] == "metrics" and "train_loss" in e["metrics"]]
    return {"events": sorted({e["event"] for e in events}), "config": sorted(config), "train_loss": losses,
            "metrics": sorted(metrics), "artifacts": sorted(p.name for p in (arm_dir / "artifacts").iterdir()),
            "samples": json.loads((arm_dir / "artifacts" / "samples.json").read_text())}


@pytest.mark.slow
def test_a_command_arm_records_what_a_worker_arm_of_the_same_run_records(tmp_path: Path, toy_cache: Path) -> None:
    from hypotrack.toy.lab import ensure_model

    env = env_for(tmp_path, toy_cache)
    env["MY_MODEL_DIR"] = str(ensure_model("arith"))
    records = {}
    for name, experiment in (("worker", "toy_arith"), ("command", str(SCRIPT))):
        outputs = tmp_path / name
        result = cli(["run", "h02", "--experiment", experiment, "--arms", "control", "--seeds", "1",
                      "--max-steps", "2", "--output-dir", str(outputs)], env, tmp_path, timeout=600)
        assert result.returncode == 0, result.stdout + result.stderr
        records[name] = _record(outputs)
    worker, command = records["worker"], records["command"]
    assert worker["events"] == command["events"] == ["config", "finished", "metrics", "started"]
    assert worker["config"] == command["config"]
    # the held-out evaluation before and after training is the worker's own (eval/*), and the script's printer
    # callback pops transformers' total_flos from the end-of-training log before any later callback reads it
    own = {key for key in worker["metrics"] if key.startswith("eval/")} | {"total_flos"}
    assert set(worker["metrics"]) - own == set(command["metrics"])
    assert {"reward_errors", "reward_errors/arith_correct", "task_reward", "diag/token_masking/prompt_share"} \
        <= set(command["metrics"])
    assert worker["artifacts"] == command["artifacts"] and "samples.json" in command["artifacts"]
    assert [sorted(row) for row in worker["samples"]] == [sorted(row) for row in command["samples"]]
    # the same run, trained the same way: the same seed, rows, rewards and settings give the same loss
    assert worker["train_loss"] == pytest.approx(command["train_loss"], rel=1e-6) and command["train_loss"]


@pytest.mark.slow
def test_a_command_arm_whose_task_reward_never_scores_is_stopped_with_the_reason(tmp_path: Path,
                                                                                 toy_cache: Path) -> None:
    """The worker's task-signal guard, in the user's script: the reward raised on every call, TRL would have
    trained on zero advantages, and the arm stops at step 2 naming the function and its first error."""
    import yaml

    from hypotrack.toy.lab import ensure_model

    data = yaml.safe_load(SCRIPT.read_text())
    data["command"]["run"] += " --broken-task-reward"
    experiment = tmp_path / "broken" / "toy_arith_script.yaml"
    experiment.parent.mkdir()
    experiment.write_text(yaml.safe_dump(data))
    (experiment.parent / "train_toy_arith.py").write_text((SCRIPT.parent / "train_toy_arith.py").read_text())
    env = env_for(tmp_path, toy_cache)
    env["MY_MODEL_DIR"] = str(ensure_model("arith"))
    result = cli(["run", "h02", "--experiment", str(experiment), "--arms", "control", "--seeds", "1",
                  "--max-steps", "4", "--output-dir", str(tmp_path / "outputs")], env, tmp_path, timeout=600)
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in result.stdout
    assert "the task reward arith_correct gave no score to any completion" in output
    assert "KeyError" in output


def test_each_treatment_declares_its_flag_and_the_run_settings_read_it() -> None:
    from hypotrack.definitions import Project, load_library
    from hypotrack.definitions.run_settings import SETTINGS_BY_NAME
    from hypotrack.faults.base import SEAMS
    from hypotrack.treatments.base import Treatment
    from hypotrack.treatments.manifest import TREATMENT_CLASSES

    hypotheses = load_library(Project.locate()).hypotheses
    for name, cls in TREATMENT_CLASSES.items():
        assert cls.name == name and cls.fixes in hypotheses and cls.help.startswith("Treatment arm:"), name
        assert cls.seams and set(cls.seams) <= set(SEAMS), f"{name}: seams come from faults/base.py SEAMS"
        assert set(cls.setting_docs()) == set(cls.setting_defaults()), name
        assert any(getattr(cls, stage) is not getattr(Treatment, stage) for stage in ("reward_functions", "attach"))
        setting = SETTINGS_BY_NAME[name]  # the flag --<name>, derived from the class
        assert (setting.lands, setting.scope, setting.help, setting.inside_trainer) == (
            "treatments", "treatment", cls.help, True)
    # a hypothesis names its treatment by the flag; the arm carries it by name
    assert "mask_non_policy_tokens" in hypotheses["h02"].treatment.model_dump(exclude_defaults=True)


@pytest.mark.slow
def test_a_run_that_declares_no_reference_column_gets_the_task_rewards_own_argument(tmp_path: Path,
                                                                                    toy_cache: Path) -> None:
    """The user's script declares no reference column; its task reward `arith_correct(completions, answer)` names
    one, so the reward check (h13) scores the answers of `answer` and the verdict says what was inferred."""
    from mlflow import MlflowClient

    from hypotrack.toy.lab import ensure_model

    env = env_for(tmp_path, toy_cache)
    env["MY_MODEL_DIR"] = str(ensure_model("arith"))
    result = cli(["run", "h13", "--experiment", str(SCRIPT), "--arms", "control", "--seeds", "1", "--max-steps", "2",
                  "--output-dir", str(tmp_path / "outputs")], env, tmp_path, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (arm_dir,) = [p for p in (tmp_path / "outputs").glob("*/*") if (p / "events.jsonl").exists()]
    config = next(e for e in _events(arm_dir) if e["event"] == "config")
    sentence = ("reference answers: column `answer`, the task reward `arith_correct`'s own argument; override with "
                "data.reference_column")
    assert config["inferred"] == {"data.reference_column": sentence}
    metrics = set().union(*(e["metrics"] for e in _events(arm_dir) if e["event"] == "metrics"))
    assert "diag/reward_check/reference_beats_wrong_share" in metrics  # the check ran on the inferred column
    shown = json.loads(cli(["show", "h13", "--json"], env, tmp_path).stdout)
    assert f"inferred: {sentence}" in json.dumps(shown), shown
    client = MlflowClient(env["MLFLOW_TRACKING_URI"])
    runs = [run for exp in client.search_experiments() for run in client.search_runs([exp.experiment_id])]
    assert [run.data.tags.get("hypotrack.inferred") for run in runs if run.data.tags.get("hypotrack.arm")] == [sentence]
