"""`hypotrack run` end to end on the toy lab: real workers, a real MLflow store, a real registry."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from runner_support import TINY, cli, env_for, mlflow_runs, registry_rows

pytestmark = pytest.mark.slow


def test_run_h06_trains_both_arms_logs_mlflow_and_records_verdict(tmp_path: Path, toy_cache: Path) -> None:
    env = env_for(tmp_path, toy_cache)
    result = cli(["run", "h06", "--no-peft", *TINY], env, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Verdict:" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr

    db = tmp_path / "registry.db"
    (test_id, state, verdict, parent_id) = registry_rows(
        db, "select id, state, verdict, mlflow_parent_run_id from test_run")[0]
    assert state == "finished" and verdict in ("validated", "invalidated", "inconclusive")
    history = registry_rows(db, "select from_status, to_status from status_change where hypothesis_id='h06' order by id")
    assert history[0] == ("pending", "testing") and history[-1] == ("testing", verdict)

    runs = {run.info.run_id: run for run in mlflow_runs(tmp_path)}
    parent = runs[parent_id]
    children = [r for r in runs.values() if r.data.tags.get("mlflow.parentRunId") == parent_id]
    assert parent.info.status == "FINISHED" and parent.data.tags["hypotrack.verdict"] == verdict
    assert sorted(c.data.tags["hypotrack.arm"] for c in children) == ["control", "treatment"]
    assert all(c.info.status == "FINISHED" for c in children)
    assert all(c.data.tags["hypotrack.test"] == test_id and c.data.tags["hypotrack.seed"] == "0" for c in children)
    # Same metric keys in every arm, so MLflow's compare view lines them up, except the diagnostics that do
    # not apply to full fine-tuning: the treatment logs no adapter keys rather than zeros
    from hypotrack.hooks.lora_sync import ADAPTER_KEYS

    keys = {c.data.tags["hypotrack.arm"]: set(c.data.metrics) for c in children}
    # (and, with no KL term, no reference whose weights could be compared with the base's)
    adapters = {f"diag/lora_sync/{key}" for key in (*ADAPTER_KEYS, "gen_adapter_active_share", "lora_enabled",
                                                     "ref_available", "ref_equals_base")}
    assert keys["treatment"] == keys["control"] - adapters and "diag/lora_sync/a_norm_mean" in keys["control"]
    assert {"reward", "loss", "diag/lora_sync/gen_checksum_rel_diff"} <= keys["treatment"]
    assert {c.data.params["peft"] for c in children} == {"true", "false"}
    for child in children:
        assert child.data.tags["version.trl"].startswith("1.16")
        assert len(child.data.params["config_hash"]) == 16

    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    parent_files = {a.path for a in client.list_artifacts(parent_id)}
    assert {"verdict.json", "reward_curves.png", "hypothesis", "resolved"} <= parent_files
    child_files = {a.path for a in client.list_artifacts(children[0].info.run_id)}
    assert {"samples.json", "resolved"} <= child_files
    table = json.loads(Path(client.download_artifacts(children[0].info.run_id, "samples.json", str(tmp_path))).read_text())
    assert {"completion", "step"} <= set(table["columns"]) and table["data"]

    status = cli(["status", "--json"], env, tmp_path)
    row = next(r for r in json.loads(status.stdout) if r["id"] == "h06")
    assert row["status"] == verdict and row["last_run_id"] == test_id


def test_dry_run_prints_arms_and_trains_nothing(tmp_path: Path, toy_cache: Path) -> None:
    env = env_for(tmp_path, toy_cache)
    result = cli(["run", "h01", "--seeds", "2", "--scale-rewards", "batch", "--dry-run"], env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "control" in result.stdout and "treatment" in result.stdout and '"scale_rewards": "batch"' in result.stdout
    assert not (tmp_path / "mlflow.db").exists()
    assert not registry_rows(tmp_path / "registry.db", "select id from test_run")


@pytest.mark.parametrize("args, expected", [
    (["--set", "learning_rate=abc"], "wrong type"),
    (["--set", "not_a_field=1"], "not a GRPOConfig field"),
    (["--model", "/nonexistent/model"], "no such folder"),
    (["--batch-size", "6", "--num-generations", "4"], "multiple of num_generations"),
    (["--dataset", "missing_module:load"], "cannot import module"),
    (["--dataset", "nobody/no-such-dataset,main,train"], "could not be found"),  # hub offline in tests
    (["--arms", "control", "--set", "beta=0.1"], "--set: these flags change the treatment arm only"),
])
def test_bad_settings_fail_before_training(tmp_path: Path, toy_cache: Path, args: list[str], expected: str) -> None:
    env = env_for(tmp_path, toy_cache)
    result = cli(["run", "h01", "--seeds", "1", *args], env, tmp_path, timeout=120)
    assert result.returncode != 0
    assert expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert not registry_rows(tmp_path / "registry.db", "select id from test_run")


def _user_project(tmp_path: Path, reward_body: str, settings: str = "") -> Path:
    """A user's project: an experiment with a reward module beside it, and one hypothesis."""
    project = tmp_path / "project"
    (project / "experiments").mkdir(parents=True)
    (project / "hypotheses").mkdir()
    (project / "experiments" / "my_rewards.py").write_text(textwrap.dedent(reward_body))
    (project / "experiments" / "mine.yaml").write_text(textwrap.dedent(f"""\
        name: mine
        model: toy:arith
        data: {{task: arith, size: 64}}
        rewards: [hypotrack.toy.rewards:arith_correct, my_rewards:flaky]
        settings: {{per_device_train_batch_size: 8, num_generations: 4, max_completion_length: 8{settings}}}
        seeds: [0]
        max_steps: 4
        """))
    (project / "hypotheses" / "h01_mine.yaml").write_text(textwrap.dedent("""\
        id: h01
        title: Mine
        priority: high
        statement: The flaky reward hurts.
        experiment: mine
        treatment: {rewards: [hypotrack.toy.rewards:arith_correct]}
        criteria:
          validated:
            - {metric: reward, arm: delta, steps: mean, seeds: all, op: ">", threshold: 0.5}
        """))
    return project


def test_reward_function_that_raises_is_counted_and_reported(tmp_path: Path, toy_cache: Path) -> None:
    project = _user_project(tmp_path, """\
        calls = 0
        def flaky(completions, **kwargs):
            global calls
            calls += 1
            if calls % 2 == 0:
                raise ValueError("parser choked")
            return [0.0 for _ in completions]
        """)
    env = env_for(tmp_path, toy_cache, project)
    result = cli(["run", "h01"], env, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Reward functions raised" in result.stdout and "flaky" in result.stdout
    control = next(r for r in mlflow_runs(tmp_path) if r.data.tags.get("hypotrack.arm") == "control")
    assert control.data.metrics["reward_errors/flaky"] >= 0  # logged every step (last value may be 0)
    assert "parser choked" in control.data.tags["hypotrack.reward_errors"]
    from mlflow import MlflowClient

    history = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}").get_metric_history(control.info.run_id,
                                                                                     "reward_errors/flaky")
    assert sum(m.value for m in history) >= 1



def test_a_task_reward_that_scores_nothing_stops_the_arm_and_names_itself(tmp_path: Path, toy_cache: Path) -> None:
    # (NaN instead of None takes the same path: tests/test_worker_guards.py)
    project = _user_project(tmp_path, """\
        def flaky(completions, **kwargs):
            return [None for _ in completions]
        """)
    experiment = project / "experiments" / "mine.yaml"
    experiment.write_text(experiment.read_text() + "task_reward: flaky\n")
    env = env_for(tmp_path, toy_cache, project)
    result = cli(["run", "h01", "--arms", "control"], env, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    assert "task reward flaky gave no score" in " ".join(result.stdout.split()), result.stdout
    (verdict, state) = registry_rows(tmp_path / "registry.db", "select verdict, state from test_run")[0]
    assert (verdict, state) == ("inconclusive", "failed")
    assert registry_rows(tmp_path / "registry.db", "select status from hypothesis_state where id='h01'") == [
        ("inconclusive",)]
    statuses = {r.data.tags.get("hypotrack.arm"): r.info.status for r in mlflow_runs(tmp_path)}
    assert statuses["control"] == "FAILED"

def test_nan_loss_stops_the_arm_with_a_clear_error(tmp_path: Path, toy_cache: Path) -> None:
    # Random rewards give non-zero advantages, so the absurd learning rate really moves the weights.
    project = _user_project(tmp_path, """\
        import random
        def flaky(completions, **kwargs):
            return [random.random() for _ in completions]
        """, settings=", learning_rate: 1.0e+30")
    env = env_for(tmp_path, toy_cache, project)
    result = cli(["run", "h01"], env, tmp_path)
    assert result.returncode == 1
    out = result.stdout.lower()
    assert "loss became nan" in out or "loss became inf" in out or "weights became non-finite" in out, result.stdout
    (verdict, state) = registry_rows(tmp_path / "registry.db", "select verdict, state from test_run")[0]
    assert (verdict, state) == ("inconclusive", "failed")
    statuses = {r.data.tags.get("hypotrack.arm"): r.info.status for r in mlflow_runs(tmp_path)}
    assert statuses["control"] == "FAILED"


def test_advantages_hook_follows_trls_normalize_then_sum(tmp_path: Path, toy_cache: Path) -> None:
    """The h01 hook recomputes the advantages TRL handed the loss; under the other aggregation it must agree."""
    env = env_for(tmp_path, toy_cache)
    result = cli(["run", "h01", "--arms", "treatment", *TINY, "--set", "multi_objective_aggregation=normalize_then_sum"],
                 env, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    child = next(r for r in mlflow_runs(tmp_path) if r.data.tags.get("hypotrack.arm") == "treatment")
    assert child.data.params["grpo.multi_objective_aggregation"] == "normalize_then_sum"

    def history(key: str) -> list[float]:
        return [m.value for m in client.get_metric_history(child.info.run_id, f"diag/advantages/{key}")]

    assert max(history("abs_max")) > 0.1  # real, non-tied groups were scored
    assert max(history("recompute_max_abs_diff")) < 1e-5
