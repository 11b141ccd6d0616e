"""`hypotrack init --command` on any script, and the command experiment it writes, used as users use it.

Each case types the commands a user types, in the folder they type them in: a Hydra-style script
(key=value), one that only takes --config, the script beside where they stand; then status, next,
validate, a dry run, --seeds and --batch-size on the written experiment. A registry from a newer
hypotrack, and a file read outside experiments/, are met the same way. Real CLI processes, a real SQLite
registry; nothing here trains except the tests marked slow.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from runner_support import cli, env_for, mlflow_runs, registry_rows

SCRIPT_DIR = Path(__file__).parent / "user_script"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's folder: their script, and nothing of hypotrack's yet."""
    folder = tmp_path / "work"
    folder.mkdir()
    shutil.copy(SCRIPT_DIR / "train_sums.py", folder / "train_sums.py")
    (folder / "train.py").write_text("import sys\nprint(sys.argv)\n")  # a script whose arguments are Hydra's
    return folder


def user_env(tmp_path: Path, project: Path, toy_cache: Path | None = None) -> dict[str, str]:
    env = env_for(tmp_path, toy_cache or tmp_path / "no-cache", project)
    if toy_cache is not None:
        from hypotrack.toy.lab import ensure_model

        env["MY_MODEL_DIR"] = str(ensure_model("arith"))
    return env


def init_command(project: Path, env: dict[str, str], command: str, task_reward: str = "sum_correct") -> dict:
    done = cli(["init", "--command", command], env, project)
    assert done.returncode == 0, done.stderr
    path = project / "experiments" / "my_script.yaml"
    path.write_text(path.read_text().replace("task_reward: CHANGE_ME", f"task_reward: {task_reward}"))
    return yaml.safe_load(path.read_text())


def lines_of(output: str, start: str) -> list[str]:
    return [line.strip() for line in output.splitlines() if line.strip().startswith(start)]


HYDRA = ("python train.py trainer.seed=1 actor_rollout_ref.actor.optim.lr=1e-6 algorithm.kl_ctrl.kl_coef=0.001 "
         "trainer.total_training_steps=100 trainer.default_local_dir=ckpt")


def test_a_hydra_style_command_gets_its_key_value_arguments_mapped(tmp_path: Path, project: Path) -> None:
    env = user_env(tmp_path, project)
    data = init_command(project, env, HYDRA)
    command = data["command"]
    assert command["seed"] == "trainer.seed={value}" and command["max_steps"] == "trainer.total_training_steps={value}"
    assert command["output_dir"] == "trainer.default_local_dir={value}"
    assert command["treatments"] == {"kl_beta": "algorithm.kl_ctrl.kl_coef={value}",
                                     "learning_rate_factor": "actor_rollout_ref.actor.optim.lr={value}"}
    assert data["settings"] == {"learning_rate": 1e-6, "beta": 0.001}
    for args in (["status"], ["next"], ["validate"]):
        done = cli(args, env, project)
        assert done.returncode == 0, (args, done.stderr)
    dry = cli(["run", "h03", "--experiment", "my_script", "--seeds", "1", "--dry-run"], env, project)
    assert dry.returncode == 0, dry.stderr
    control, treatment = lines_of(dry.stdout, "python train.py")
    assert control.endswith("trainer.seed=0 trainer.total_training_steps=30 "
                            "'trainer.default_local_dir=<arm-folder>/output'"), control
    assert treatment.endswith("algorithm.kl_ctrl.kl_coef=0.0"), treatment  # Hydra takes the last of a repeated key


@pytest.mark.parametrize("command", ["python train.py --config x.yaml", "python train.py", "accelerate launch train.py"])
def test_a_command_with_no_recognised_argument_writes_a_file_every_command_reads(tmp_path: Path, project: Path,
                                                                                 command: str) -> None:
    env = user_env(tmp_path, project)
    data = init_command(project, env, command)
    assert data["command"]["treatments"] == {} and data["settings"] == {}
    assert data["seeds"] == [0]  # no seed reaches the script: one seed, and the file says why
    assert "without command.seed every seed would run the same command" in (
        project / "experiments" / "my_script.yaml").read_text()
    for args in (["status"], ["next"], ["validate"], ["show", "h01"]):
        done = cli(args, env, project)
        assert done.returncode == 0, (args, done.stderr)
        assert "command.treatments" not in done.stderr
    refused = cli(["run", "h23", "--experiment", "my_script", "--dry-run"], env, project)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "command.treatments has no mapping for loss_type" in refused.stderr  # the mapping to add, not a schema error


def test_a_hypothesis_that_does_not_apply_is_recorded_so_before_a_missing_flag_could_refuse_it(tmp_path: Path,
                                                                                                project: Path) -> None:
    env = user_env(tmp_path, project)
    init_command(project, env, "python train.py")
    # h03 needs a KL term and the script declares no beta (TRL's default is 0): the hypothesis does not apply, which
    # is recorded, before its treatment's kl_beta, which no flag of the script takes, could refuse the run
    dry = cli(["run", "h03", "--experiment", "my_script", "--dry-run"], env, project)
    assert dry.returncode == 0, dry.stderr
    assert "h03 does not apply to this run" in dry.stdout and "not mapped onto the script's flags" in dry.stdout
    recorded = cli(["run", "h03", "--experiment", "my_script"], env, project)
    assert recorded.returncode == 0, recorded.stderr
    assert "not applicable" in recorded.stdout and "beta is 0" in recorded.stdout, recorded.stdout
    status = json.loads(cli(["status", "--json"], env, project).stdout)
    assert next(row for row in status if row["id"] == "h03")["status"] == "not_applicable", status


def test_the_command_runs_where_it_was_typed(tmp_path: Path, project: Path) -> None:
    env = user_env(tmp_path, project)
    data = init_command(project, env, "python train_sums.py --lr 5e-3 --beta 0.04 --seed 3")
    assert data["command"]["cwd"] == ".."  # experiments/ is one below where the user typed it
    dry = cli(["run", "h03", "--experiment", "my_script", "--seeds", "1", "--dry-run"], env, project)
    assert dry.returncode == 0, dry.stderr
    assert f"in {project}:" in dry.stdout.replace("\n", " ")


def test_a_command_whose_script_is_not_where_it_runs_is_told_about_command_cwd(tmp_path: Path,
                                                                                project: Path) -> None:
    env = user_env(tmp_path, project)
    init_command(project, env, "python train_sums.py --beta 0.04 --seed 1")
    path = project / "experiments" / "my_script.yaml"
    path.write_text(path.read_text().replace('cwd: ".."', 'cwd: "."'))  # the folder of the old default
    done = cli(["run", "h03", "--experiment", "my_script", "--seeds", "1", "--dry-run"], env, project)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    message = " ".join(done.stderr.split())
    assert "train_sums.py does not exist: the command runs in" in message and "set command.cwd" in message


def test_init_command_typed_in_a_subfolder_runs_there(tmp_path: Path, project: Path) -> None:
    scripts = project / "scripts"
    scripts.mkdir()
    (project / "hypotheses").mkdir()  # the project is the folder above
    env = user_env(tmp_path, project)
    done = cli(["init", str(project), "--command", "python train.py --seed 1"], env, scripts)
    assert done.returncode == 0, done.stderr
    assert yaml.safe_load((project / "experiments" / "my_script.yaml").read_text())["command"]["cwd"] == "../scripts"


@pytest.mark.slow
def test_init_command_beside_the_script_writes_a_file_that_trains_as_typed(tmp_path: Path, project: Path,
                                                                          toy_cache: Path) -> None:
    env = user_env(tmp_path, project, toy_cache)
    init_command(project, env, "python train_sums.py --lr 5e-3 --beta 0.04 --max-steps 2 --seed 3")
    done = cli(["run", "h03", "--experiment", "my_script", "--seeds", "1", "--max-steps", "2", "--arms", "control",
                "--output-dir", str(tmp_path / "outputs")], env, project, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert registry_rows(tmp_path / "registry.db", "select state from test_run") == [("finished",)]


def test_seeds_without_a_seed_mapping_are_refused_before_anything_is_recorded(tmp_path: Path, project: Path) -> None:
    env = user_env(tmp_path, project)
    init_command(project, env, "python train_sums.py --lr 5e-3 --beta 0.04")
    done = cli(["run", "h03", "--experiment", "my_script", "--seeds", "2"], env, project)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    message = " ".join(done.stderr.split())
    assert "--seeds 2: experiment 'my_script' has no command.seed mapping" in message
    assert "count one run as several seeds" in message and 'seed: "--seed {value}"' in message
    assert registry_rows(tmp_path / "registry.db", "select * from test_run") == []
    one = cli(["run", "h03", "--experiment", "my_script", "--seeds", "1", "--dry-run"], env, project)
    assert one.returncode == 0, one.stderr


def test_seeds_added_later_reach_the_script_and_without_a_mapping_are_refused(tmp_path: Path, project: Path) -> None:
    env = user_env(tmp_path, project)
    init_command(project, env, "python train_sums.py --beta 0.04 --seed 1")
    code = ("from hypotrack.definitions import Project, load_library; from hypotrack.run.api import prepare_test; "
            "plan = prepare_test(load_library(Project.locate()), 'h03', experiment='my_script').reseeded([5, 6]); "
            "print(sorted((s.arm, s.seed, ' '.join(s.command)) for s in plan.specs))")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=project, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    for seed in (5, 6):  # each added seed's command line carries that seed (--more-seeds, --seeds auto)
        assert f"('control', {seed}, 'python train_sums.py --beta 0.04 --seed 1 --seed {seed}')" in done.stdout
    unmapped = project / "experiments" / "my_script.yaml"
    unmapped.write_text(unmapped.read_text().replace('  seed: "--seed {value}"\n', "").replace(
        "seeds: [0, 1]", "seeds: [0]"))
    refused = cli(["run", "h03", "--experiment", "my_script", "--more-seeds", "1", "--dry-run"], env, project)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr, refused.stdout
    assert "adding seed(s) [0] (--more-seeds, --seeds auto): experiment 'my_script' has no command.seed mapping" in \
        " ".join(refused.stderr.split())


def test_a_setup_flag_without_a_mapping_is_named_as_the_users_flag(tmp_path: Path, project: Path) -> None:
    env = user_env(tmp_path, project)
    init_command(project, env, "python train_sums.py --lr 5e-3 --beta 0.04 --seed 1")
    done = cli(["run", "h01", "--experiment", "my_script", "--batch-size", "8", "--dry-run"], env, project)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    message = " ".join(done.stderr.split())
    assert "the flag --batch-size sets batch_size = 8" in message and "leave --batch-size out" in message
    assert "h01's treatment" not in message


def test_a_task_reward_missing_from_reward_functions_is_reported_at_its_line(tmp_path: Path, project: Path) -> None:
    env = user_env(tmp_path, project)
    path = project / "c_tr.yaml"
    path.write_text("name: c_tr\ncommand:\n  run: python train_sums.py\n  seed: --seed {value}\n"
                    "  reward_functions: [sum_correct, terse]\ntask_reward: exact\nseeds: [0]\n")
    done = cli(["validate", str(path)], env, project)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{path.name}:6: task_reward: task_reward 'exact' is not one of command.reward_functions" in done.stderr
    assert "(document)" not in done.stderr


def test_validate_reads_a_command_experiment_outside_an_experiments_folder_as_an_experiment(tmp_path: Path,
                                                                                           project: Path) -> None:
    env = user_env(tmp_path, project)
    path = project / "my_script.yaml"
    path.write_text("name: my_script\ncommand:\n  run: python train_sums.py\n  seed: --seed {value}\n"
                    "task_reward: sum_correct\nseeds: [0, 1]\n")
    done = cli(["validate", str(path)], env, project)
    assert done.returncode == 0, done.stderr
    assert "ok: 0 hypotheses, 1 experiments" in done.stdout
    hypothesis = cli(["validate", str(Path(__file__).parents[1] / "hypotheses" / "h01_advantage_scaling_instability.yaml")],
                     env, project)
    assert hypothesis.returncode == 0 and "ok: 1 hypotheses" in hypothesis.stdout, hypothesis.stderr


def test_validate_sorts_a_folder_of_both_kinds_by_what_each_file_holds(tmp_path: Path, project: Path) -> None:
    env = user_env(tmp_path, project)
    folder = project / "configs"
    folder.mkdir()
    (folder / "my_script.yaml").write_text("name: my_script\ncommand:\n  run: python train_sums.py\n"
                                           "task_reward: sum_correct\nseeds: [0]\n")
    shutil.copy(Path(__file__).parents[1] / "hypotheses" / "h01_advantage_scaling_instability.yaml", folder)
    done = cli(["validate", str(folder)], env, project)
    assert done.returncode == 0, done.stderr
    assert "ok: 1 hypotheses, 2 experiments" in done.stdout  # my_script, and the shipped one h01 names


@pytest.mark.parametrize("args", [["db", "current"], ["status"], ["next"], ["db", "upgrade"]])
def test_a_registry_from_a_newer_hypotrack_is_named_as_such(tmp_path: Path, project: Path, args: list[str]) -> None:
    env = user_env(tmp_path, project)
    assert cli(["status"], env, project).returncode == 0  # a registry at this hypotrack's head
    db = tmp_path / "registry.db"
    with sqlite3.connect(db) as con:
        con.execute("update alembic_version set version_num = '0099'")
    before = registry_rows(db, "select * from alembic_version")
    done = cli(args, env, project)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    message = " ".join(done.stderr.split())
    assert "is at schema revision 0099, written by a newer hypotrack than this one" in message
    assert "Can't locate revision" not in message and "behind head" not in done.stdout
    assert registry_rows(db, "select * from alembic_version") == before == [("0099",)]


def test_repeated_seeds_count_once(tmp_path: Path) -> None:
    from hypotrack.run.recording.seed_check import without_repeats

    first = {"reward": [(1, 0.25)], "entropy": [(1, 0.8131)], "loss": [(1, 0.0)], "reward_std": [(1, 0.31)],
             "step_time": [(1, 0.061)]}
    other = {"reward": [(1, 0.25)], "entropy": [(1, 0.7902)], "loss": [(1, 0.0)], "reward_std": [(1, 0.33)]}
    repeat = {**first, "step_time": [(1, 0.058)]}  # the same training, timed differently
    series = {"control": {0: first, 1: repeat, 2: other}, "treatment": {0: other, 1: dict(other), 2: first}}
    trimmed, seeds, note = without_repeats(series, [0, 1, 2])
    assert seeds == [0, 2] and set(trimmed["control"]) == {0, 2} and "seed 1 repeated seed 0" in note
    series["treatment"][1] = first  # a seed that differs in one arm is its own run
    assert without_repeats(series, [0, 1, 2])[1] == [0, 1, 2]


@pytest.mark.slow
def test_two_seeds_that_never_reach_the_script_count_as_one_in_the_verdict(tmp_path: Path, project: Path,
                                                                            toy_cache: Path) -> None:
    env = user_env(tmp_path, project, toy_cache)
    (project / "experiments").mkdir()
    # a seed mapping the script never reads: every seed trains the script's own seed 0
    (project / "experiments" / "my_script.yaml").write_text(
        "name: my_script\ncommand:\n  run: python train_sums.py --lr 5e-3 --batch-size 8\n  cwd: ..\n"
        "  seed: {env: SEED_NOBODY_READS}\n  max_steps: --max-steps {value}\n"
        "  treatments: {scale_rewards: {none: --scale-rewards false}}\n"
        "  reward_functions: [sum_correct, terse]\ntask_reward: sum_correct\nseeds: [0, 1]\nmax_steps: 2\n")
    done = cli(["run", "h01", "--experiment", "my_script", "--output-dir", str(tmp_path / "outputs")], env, project,
               timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    [(summary, confidence)] = registry_rows(tmp_path / "registry.db", "select summary, confidence from test_run")
    assert "seed 1 repeated seed 0 bit for bit" in summary and "1 distinct seed(s)" in summary, summary
    assert confidence is None or confidence <= 0.667  # one seed's confidence, (agreeing + 1) / (1 + 2) at most
    assert len([r for r in mlflow_runs(tmp_path) if r.data.tags.get("hypotrack.kind") == "arm"]) == 4
