"""Every format a run's logs come in, read by `hypotrack triage`: the same run's numbers whatever file holds them.

- One plain TRL run on the toy lab (tests/triage_plain_trl.py, report_to tensorboard and W&B offline) leaves all
  of its own logs: the trainer_state.json of its checkpoint, the training_args.bin beside it, TensorBoard event
  files under output_dir/runs/, W&B's run file under wandb/, and the dicts its Trainer printed on the console.
  Each is read on its own and must give the same series.
- A real public run of the real-run corpus (IMJONEZZ/UnslothGRPO, MIT; marked real_runs, as its log is kept in
  shared/real_runs/): Unsloth's trainer_state.json and its training_args.bin, read without torch.
- Tracker exports written the way W&B, verl and OpenRLHF write them: several runs in one CSV, verl's metric
  names, JSON records.
- Files triage cannot read: one sentence naming the file, what it is and what to pass instead.
"""

from __future__ import annotations

import json
import math
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from hypotrack.errors import HypotrackError
from hypotrack.triage.keys import canonical, canonical_name, is_training_metric
from hypotrack.triage.runlog import PRIOR_TRAINING, STEPS_ASSUMED, RunLog
from hypotrack.triage.sources import read_runs, read_source
from hypotrack.triage.training_args import read_training_args, settings

HERE = Path(__file__).resolve().parent
MARKER = "@@plain-trl-run@@"
STEPS = 6


# --------------------------------------------------------------------------- one real TRL run, every log it left


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory, toy_cache: Path) -> dict:
    """A plain TRL GRPO run that logs to TensorBoard and to W&B (offline, as a run with no W&B account keeps it);
    its console output kept as a user's `| tee train.log`."""
    out = tmp_path_factory.mktemp("formats")
    env = {**os.environ, "HYPOTRACK_CACHE": str(toy_cache), "HF_HUB_OFFLINE": "1", "PYTHONWARNINGS": "ignore",
           "WANDB_MODE": "offline", "WANDB_DIR": str(out), "WANDB_SILENT": "true"}
    done = subprocess.run([sys.executable, str(HERE / "triage_plain_trl.py"), str(out), "clean", "--steps", str(STEPS),
                           "--report-to", "tensorboard,wandb"], env=env, cwd=out, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    console = out / "train.log"
    console.write_text(done.stderr + done.stdout)  # what `python train.py 2>&1 | tee train.log` keeps
    run = next(json.loads(line[len(MARKER):]) for line in done.stdout.splitlines() if line.startswith(MARKER))
    return {"output_dir": Path(run["output_dir"]), "console": console, "wandb": out / "wandb"}


@pytest.mark.slow
def test_every_log_of_one_run_reads_the_same(plain_run):
    output = plain_run["output_dir"]
    state = read_source(str(output))
    assert state.kind == "trainer_state" and state.params["beta"] == "0.0"  # training_args.bin, found beside it
    assert state.params["num_generations"] == "4" and state.params["loss_type"] == "dapo"
    events = list(output.rglob("*tfevents*"))
    assert events, sorted(str(p.relative_to(output)) for p in output.rglob("*"))
    board = read_source(str(events[0].parent))
    console = read_source(str(plain_run["console"]))
    wandb_run = read_source(str(plain_run["wandb"]))  # the wandb/ folder: its one run file, run-<id>.wandb
    assert (board.kind, console.kind, wandb_run.kind) == ("tensorboard", "console", "wandb")
    assert wandb_run.params["num_generations"] == "4"  # the run's config, as W&B keeps it
    for log in (board, console, wandb_run):
        series = {canonical_name(k): v for k, v in log.series.items() if canonical_name(k)}
        assert [s for s, _ in series["reward"]] == list(range(1, STEPS + 1)), log.kind
        for (step, value), (same_step, expected) in zip(series["reward"], state.series["reward"]):
            assert step == same_step and value == pytest.approx(expected, rel=1e-5, abs=1e-6), log.kind
        assert set(series) >= {"loss", "reward", "reward_std", "frac_reward_zero_std", "rewards/arith_correct/mean"}


@pytest.mark.slow
def test_a_wandb_run_file_reads_where_the_wandb_package_is_not_installed(plain_run):
    """A user who never installed wandb triages a teammate's committed wandb/ folder: its records are read against
    the part of W&B's schema hypotrack declares (the import of wandb is made to fail here)."""
    code = ("import sys; sys.modules['wandb'] = None\n"
            "from hypotrack.triage.sources import read_source\n"
            f"log = read_source({str(plain_run['wandb'])!r})\n"
            "print(len(log.series['train/reward']), log.params['num_generations'], 'wandb' in sys.modules and "
            "sys.modules['wandb'] is not None)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(STEPS), "4", "False"], done.stdout


@pytest.mark.slow
def test_triage_of_a_tensorboard_folder_says_first_whether_the_run_learns(plain_run, run_cli):
    result = run_cli("triage", plain_run["output_dir"] / "runs", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["kind"] == "tensorboard" and report["steps"] == STEPS
    assert report["progress"]["state"] in ("learning", "flat", "getting worse", "unknown")
    text = run_cli("triage", plain_run["console"])
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[1].startswith("  the run first: "), lines[:3]  # before any hypothesis


# --------------------------------------------------------------------------- a real public run: Unsloth, with its settings


@pytest.mark.real_runs
def test_unsloth_trainer_state_and_its_training_args_without_torch():
    """IMJONEZZ/UnslothGRPO (MIT), outputs/checkpoint-250: a run that learned (correctness 0.23 -> 1.25)."""
    from test_triage_real_runs import corpus

    folder = corpus("unslothgrpo__ckpt250")
    fields = read_training_args(folder / "training_args.bin")
    assert fields["beta"] == 0.04 and fields["num_generations"] == 6 and fields["learning_rate"] == 5e-06
    assert fields["lr_scheduler_type"] == "cosine"  # an enum, read as its value
    log = read_source(str(folder))
    assert log.params["beta"] == "0.04" and log.params["logging_steps"] == "1"
    assert any("settings read from" in said for said in log.findings(is_training_metric))
    # nothing outside hypotrack was imported to read it
    probe = subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                            "from hypotrack.triage.training_args import settings; "
                            f"settings(Path({str(folder / 'training_args.bin')!r})); "
                            "print(sorted(m for m in ('torch', 'transformers', 'trl', 'unsloth') if m in sys.modules))"],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and probe.stdout.strip() == "[]", probe.stderr


def test_training_args_never_run_the_code_a_pickle_names(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = tmp_path / "training_args.bin"
    path.write_bytes(pickle.dumps({"learning_rate": 1e-6, "beta": 0.1, "payload": Payload()}))
    assert read_training_args(path)["beta"] == 0.1
    assert not marker.exists()
    (tmp_path / "garbage").mkdir()
    bad = tmp_path / "garbage" / "training_args.bin"
    bad.write_bytes(b"PK\x03\x04not really a zip")
    with pytest.raises(HypotrackError, match="not a transformers training_args.bin"):
        settings(bad)


# --------------------------------------------------------------------------- tracker exports


def _rows(runs: dict[str, list[float]]) -> str:
    """A W&B panel export: Step, then "<run> - <key>" with its __MIN / __MAX columns, for every run."""
    header = ["Step"] + [f"{run} - train/{key}{suffix}" for run in runs for key in ("reward", "loss")
                         for suffix in ("", "__MIN", "__MAX")]
    lines = [",".join(header)]
    for step in range(1, len(next(iter(runs.values()))) + 1):
        cells = [str(step)]
        for values in runs.values():
            for value in (values[step - 1], 0.1):
                cells += [str(value)] * 3
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def test_a_wandb_export_of_two_runs_is_two_runs(tmp_path, run_cli):
    path = tmp_path / "wandb_export.csv"
    path.write_text(_rows({"grpo-lr1e-6": [0.1 * s for s in range(1, 13)], "grpo-lr1e-5": [0.5] * 12}))
    logs = read_runs(str(path))
    assert [log.run for log in logs] == ["grpo-lr1e-6", "grpo-lr1e-5"]
    assert all(not log.repeated for log in logs)
    with pytest.raises(HypotrackError, match="holds 2 runs .*--run NAME"):
        read_source(str(path))
    assert read_source(str(path), run="grpo-lr1e-5").series["train/reward"][0] == (1, 0.5)
    both = run_cli("triage", path, "--json")
    assert both.returncode == 0, both.stderr
    reports = json.loads(both.stdout)["runs"]
    assert [r["run"] for r in reports] == ["grpo-lr1e-6", "grpo-lr1e-5"]
    assert [r["progress"]["state"] for r in reports] == ["learning", "flat"]
    one = run_cli("triage", path, "--run", "grpo-lr1e-6", "--json")
    assert json.loads(one.stdout)["run"] == "grpo-lr1e-6"
    missing = run_cli("triage", path, "--run", "nope")
    assert missing.returncode != 0 and "Traceback" not in missing.stderr and "holds no run of that name" in missing.stderr


def _trainer_state(rewards: list[float]) -> str:
    return json.dumps({"global_step": len(rewards), "log_history": [
        {"step": s, "loss": 0.01, "grad_norm": 0.3, "learning_rate": 1e-6, "reward": r, "reward_std": 0.4, "kl": 0.001}
        for s, r in enumerate(rewards, start=1)]})


def test_a_sweeps_outputs_folder_is_one_run_an_output_dir(tmp_path, run_cli):
    """`outputs/<run>/checkpoint-N/trainer_state.json`, as a sweep of TRL runs leaves them: one report per run
    folder, from its newest checkpoint (an earlier one holds fewer steps), named by the folder."""
    outputs = tmp_path / "outputs"
    for run, rewards in {"grpo-lr1e-6": [0.5] * 12, "grpo-lr1e-5": [0.1 * s for s in range(1, 13)]}.items():
        for checkpoint in (6, 12):
            folder = outputs / run / f"checkpoint-{checkpoint}"
            folder.mkdir(parents=True)
            (folder / "trainer_state.json").write_text(_trainer_state(rewards[:checkpoint]))
    logs = read_runs(str(outputs))
    assert [log.run for log in logs] == ["grpo-lr1e-5", "grpo-lr1e-6"]
    assert all(len(log.series["reward"]) == 12 for log in logs)
    both = run_cli("triage", outputs, "--json")
    assert both.returncode == 0, both.stderr
    assert [(r["run"], r["progress"]["state"]) for r in json.loads(both.stdout)["runs"]] == [
        ("grpo-lr1e-5", "learning"), ("grpo-lr1e-6", "flat")]
    assert len(read_runs(str(outputs / "grpo-lr1e-6"))) == 1  # the run's own folder is the one run


def test_a_projects_folder_is_read_through_the_one_folder_under_it_that_holds_logs(tmp_path, run_cli):
    """`hypotrack triage .` in a project: its requirements.txt and a saved model's config files are no logs, and its
    one folder of logs (logs/, three levels down at most) is read, and said; where two folders hold logs, the error
    names them."""
    (tmp_path / "requirements.txt").write_text("trl\n")
    (tmp_path / "outputs" / "final_model").mkdir(parents=True)
    for name in ("config.json", "tokenizer_config.json", "generation_config.json"):
        (tmp_path / "outputs" / "final_model" / name).write_text("{}")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "train.log").write_text("".join(
        f"{{'loss': 0.01, 'reward': {0.05 * s:.2f}, 'reward_std': 0.3, 'epoch': {s / 12:.2f}}}\n" for s in range(1, 13)))
    log = read_source(str(tmp_path))
    assert len(log.series["reward"]) == 12 and any(said.startswith("read logs/, the only folder") for said in log.said)
    (tmp_path / "eval_logs").mkdir()
    (tmp_path / "eval_logs" / "eval.jsonl").write_text('{"step": 1, "accuracy": 0.5}\n')
    result = run_cli("triage", tmp_path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "the folders under it that hold logs: eval_logs, logs: pass one of them" in result.stderr, result.stderr


def test_a_text_run_column_is_two_runs_not_a_resumed_one(tmp_path):
    path = tmp_path / "metrics.csv"
    lines = ["step,config,reward,kl"] + [f"{s},{name},{0.1 * s},{0.001 * s}" for name in ("baseline", "dense") for s in
                                         range(1, 9)]
    path.write_text("\n".join(lines) + "\n")
    logs = read_runs(str(path))
    assert [log.run for log in logs] == ["baseline", "dense"]
    assert all(not log.repeated and len(log.series["reward"]) == 8 for log in logs)
    assert not any("resumed" in said for log in logs for said in log.findings(is_training_metric))


def test_verl_metric_names_are_the_roles_triage_reads(tmp_path):
    assert canonical_name("critic/score/mean") == "reward"
    assert canonical_name("actor/entropy") == "entropy"
    assert canonical_name("actor/kl_loss") == "kl"
    assert canonical_name("response_length/mean") == "completions/mean_length"
    assert canonical_name("response_length/clip_ratio") == "completions/clipped_ratio"
    assert canonical_name("actor/grad_norm") == "grad_norm" and canonical_name("actor/lr") == "learning_rate"
    assert canonical_name("train/actor_lr") == "learning_rate"  # OpenRLHF
    assert canonical_name("objective/scores") == "reward" and canonical_name("objective/kl") == "kl"  # TRL's PPO
    # verl's console, one line a step (with Ray's prefix)
    path = tmp_path / "verl.log"
    path.write_text("".join(f"(TaskRunner pid=1) step:{s} - actor/entropy:{1.2 - s / 100:.3f} - critic/score/mean:"
                            f"{s / 20:.3f} - response_length/mean:{300 + s} - actor/pg_loss:np.float64({s / 1000}) - "
                            f"training/global_step:{s}\n" for s in range(1, 11)))
    log = read_source(str(path))
    assert log.kind == "console" and log.series["critic/score/mean"][2] == (3, 0.15)
    assert log.series["actor/pg_loss"][1] == (2, 0.002)  # numpy 2's repr of a numpy scalar

    # verl's file logger (trainer.logger=['file'], VERL_FILE_LOGGER_PATH): the step's metrics in a "data" envelope
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "elapsed_seconds": 4.5 * s, "data": {
        "critic/score/mean": s / 20, "actor/entropy": 1.2 - s / 100, "val-core/openai/gsm8k/reward/mean@1": 0.3}})
        + "\n" for s in range(1, 11)))
    log = read_source(str(path))
    assert log.series["critic/score/mean"][2] == (3, 0.15) and "data/critic/score/mean" not in log.series


def _slime_rollout(s: int) -> str:
    # the lines as slime 0.2 prints them under Ray (their keys and forms as in THUDM/slime issue #1837 and its
    # train_metric_utils.py / model.py): the rollout manager's statistics, the trainer's rollout, its update
    return (f"(RolloutManager pid=1805485) [2026-04-15 07:57:53] rollout.py:1193 - perf {s}: "
            f"{{'rollout/response_len/mean': {2773.7 + s}, 'rollout/response_len/max': 4096, "
            f"'rollout/zero_std/count_0': 12, 'rollout/zero_std/count_1': 14, 'rollout/truncated_ratio': 0.46, "
            f"'perf/rollout_time': 371.2}}\n"
            f"(MegatronTrainRayActor pid=10122) [2026-04-15 07:58:24] data.py:193 - rollout {s}: "
            f"{{'rollout/response_lengths': {2800.0 + s}, 'rollout/rewards': 1.24e-09, 'rollout/truncated': 0.0, "
            f"'rollout/raw_reward': {0.2 + s / 100}, 'rollout/ref_log_probs': -0.09, 'rollout/kl': 0.0, "
            f"'rollout/advantages': 6.2e-09}}\n"
            f"(MegatronTrainRayActor pid=10122) [2026-04-15 07:59:01] model.py:918 - step {s}: "
            f"{{'train/loss': 0.102, 'train/pg_loss': 0.102, 'train/entropy_loss': np.float64({0.6 - s / 100}), "
            f"'train/pg_clipfrac': 0.0, 'train/ppo_kl': 0.0, 'train/kl_loss': {s / 1e4}, 'train/grad_norm': nan, "
            f"'train/lr-pg_0': 1e-06, 'train/step': {s}}}\n"
            f"(MegatronTrainRayActor pid=10122) [2026-04-15 07:59:02] train_metric_utils.py:50 - perf {s}: "
            f"{{'perf/train_time': 30.1, 'perf/step_time': 401.3}}\n")


def test_slime_and_miles_metric_lines_are_one_step_each_rollout(tmp_path):
    """slime prints a rollout as several `<kind> N: {...}` lines (the rollout manager's statistics, the trainer's
    rollout, its update, its timings), Miles each update line twice: one step each, the verifier's raw reward as
    the reward (rollout/rewards is after the group normalisation), entropy_loss the entropy (kl_loss, in many loops
    the KL times its coefficient, is not read), numpy's np.float64(...) and a bare nan read; an `eval N:` line is the
    held-out score at that step."""
    path = tmp_path / "slime.log"
    text = "".join(_slime_rollout(s) + (f"(RolloutManager pid=1) [2026] rollout.py:1326 - eval {s}: "
                                        f"{{'eval/gsm8k': {0.3 + s / 50}, 'eval/gsm8k-truncated_ratio': 0.0}}\n"
                                        if s % 5 == 4 else "") for s in range(12))
    duplicate = "[2026-09-02 18:00:00.887 actor_cell0_rank0] log_utils.py:542 - step 3: {'train/loss': 0.102}\n"
    path.write_text("Loading checkpoint shards\n" + text + duplicate)
    read = read_source(str(path))
    log = canonical(read).log
    assert [step for step, _ in log.series["reward"]] == list(range(12))
    assert log.series["reward"][3] == (3, pytest.approx(0.23))
    assert log.series["entropy"][1] == (1, pytest.approx(0.59)) and "kl" not in log.series
    assert log.series["completions/mean_length"][0][1] == 2773.7  # the rollout manager's, printed first
    assert log.series["completions/clipped_ratio"][0][1] == 0.46 and log.series["learning_rate"][0][1] == 1e-6
    assert [step for step, _ in read.series["eval/gsm8k"]] == [4, 9]
    assert canonical_name("rollout/rewards") is None and canonical_name("train/ppo_kl") is None


def test_nemo_rls_step_blocks_and_names(tmp_path):
    """NeMo-RL prints each step as a block, "===== Step 3/40 =====" and bulleted results, its step counted within
    the epoch (it starts over); a "Validation Results" heading's quantities are the evaluation's, not the training's.
    Its scalars' names (TensorBoard, W&B): kl_penalty the KL to the reference, gen_kl_error no KL to one."""
    path = tmp_path / "grpo.log"
    blocks = []
    for s in range(1, 13):
        epoch_step = (s - 1) % 6 + 1
        blocks.append(f"\n{'=' * 25} Step {epoch_step}/6 {'=' * 25}\n▶ Generating responses for batch of size 64...\n"
                      f"\n📊 Training Results:\n  • Loss: 0.0100\n  • Generation KL Error: 0.0010\n"
                      f"  • Avg Reward: {0.2 + s / 100:.4f}\n  • Mean Generation Length: {200 + s:.4f}\n"
                      "\n⏱️  Timing:\n  • Total step time: 35.70s\n  • generation: 4.95s (13.9%)\n")
        if s % 6 == 0:
            blocks.append(f"\n📊 Validation Results:\n    • Accuracy: {0.9 - s / 100:.4f}\n"
                          "    • Average response length: 201.0 tokens\n    • Samples processed: 500\n")
    path.write_text("Loaded config\n" + "".join(blocks))
    log = canonical(read_source(str(path))).log
    assert [step for step, _ in log.series["reward"]] == list(range(1, 13))
    assert log.series["reward"][8] == (9, pytest.approx(0.29)) and log.series["completions/mean_length"][0] == (1, 201)
    assert "rewards/accuracy/mean" not in log.series  # the validation's accuracy is no training reward
    assert canonical_name("train/kl_penalty") == "kl" and canonical_name("train/gen_kl_error") is None
    assert canonical_name("train/mean_gen_tokens_per_sample") == "completions/mean_length"
    assert canonical_name("train/approx_entropy") == "entropy"


def test_easyr1s_console_steps_are_yaml_nested_under_their_sections(tmp_path):
    """EasyR1's console logger prints "Step N" and the step's metrics as YAML, each name nested under its section
    (actor:, reward:, response_length:, val:): reward/overall is the reward, reward/<part> a reward function's score,
    actor/entropy_loss the entropy, a `mean` under response_length the completions' length (not the advantages'
    mean under critic:), and val/ an evaluation."""
    path = tmp_path / "train.log"
    steps = []
    for s in range(1, 11):
        evaluation = f"val:\n  accuracy_reward: {0.2 + s / 100}\n  reward_score: {0.3 + s / 100}\n" if s % 5 == 0 else ""
        steps.append(f"Step {s}\nactor:\n  entropy_loss: {0.5 - s / 100}\n  grad_norm: 0.3\n  kl_loss: 0.001\n"
                     f"  lr: 1.0e-06\n  ppo_kl: 0.0\ncritic:\n  advantages:\n    max: 1.2\n    mean: 0.0\n"
                     f"response_length:\n  clip_ratio: 0.01\n  mean: {200.0 + s}\nreward:\n  accuracy: {0.2 + s / 50}\n"
                     f"  format: 0.9\n  overall: {0.3 + s / 50}\ntiming_s:\n  gen: 12.3\n{evaluation}")
    path.write_text("Config\ndata:\n  max_prompt_length: 2048\n" + "".join(steps))
    read = read_source(str(path))
    log = canonical(read).log
    assert log.series["reward"][2] == (3, pytest.approx(0.36))
    assert log.series["rewards/accuracy/mean"][0] == (1, pytest.approx(0.22))
    assert log.series["entropy"][0] == (1, pytest.approx(0.49)) and log.series["completions/mean_length"][9] == (10, 210)
    assert [step for step, _ in read.series["val/reward_score"]] == [5, 10]
    assert canonical_name("reward/std") is None and canonical_name("reward/mean") == "reward"


@pytest.mark.parametrize("colon", ["", ":"])
def test_prime_rls_two_processes_logs_are_one_run(tmp_path, colon):
    """prime-rl's orchestrator logs a step's reward and truncation, its trainer the update's loss, entropy and grad
    norm, each to its own file, in either of its line layouts (labels with a colon until mid-2026): one run."""
    for s in range(10):
        with open(tmp_path / "orchestrator.log", "a") as orchestrator, open(tmp_path / "trainer.log", "a") as trainer:
            orchestrator.write(f"12:00:{s:02d} SUCCESS Step {s} | {'Time: ' if colon else ''}12.3s | Reward{colon} "
                               f"{0.2 + s / 50:.4f} | Truncation{colon} 1.5% | Error{colon} 0.0%\n")
            trainer.write(f"12:00:{s:02d} SUCCESS Step {s} | {'Time: ' if colon else ''}1m 5s | Loss{colon} 0.0019 | "
                          f"Entropy{colon} {0.3 - s / 100:.4f} | Mismatch KL{colon} 0.0006 | Grad. Norm{colon} 0.0680 | "
                          f"LR{colon} 1.00e-06\n")
    read = read_source(str(tmp_path))
    log = canonical(read).log
    assert log.series["reward"][5] == (5, pytest.approx(0.3)) and log.series["entropy"][2] == (2, pytest.approx(0.28))
    assert log.series["grad_norm"][0][1] == 0.068 and log.series["completions/clipped_ratio"][0][1] == 0.015
    assert any("one run's processes" in said for said in read.said), read.said


def test_prime_rls_metrics_file_merges_its_processes_records(tmp_path):
    """prime-rl's metrics.jsonl holds a record of the orchestrator's and one of the trainer's for each step (both
    with their own time): one step, no resume; the shares of groups all failed and all solved sum to TRL's tied
    share."""
    path = tmp_path / "metrics.jsonl"
    records = []
    for s in range(1, 11):
        records.append({"step": s, "time": 1.7e9 + s, "time/step": 12.0,
                        "train/agg/all/agent/reward/mean": 0.2 + s / 50, "train/agg/all/agent/solved_none": 0.3,
                        "train/agg/all/agent/solved_all": s / 100, "train/agg/all/agent/num_output_tokens/mean": 300})
        records.append({"step": s, "time": 1.7e9 + s + 1, "time/step": 11.0, "loss/mean": 0.001,
                        "entropy/all/mean": 0.5, "mismatch_kl/all/mean": 0.001, "optim/grad_norm": 0.2})
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    read = read_source(str(path))
    log = canonical(read).log
    assert not read.repeated
    assert log.series["frac_reward_zero_std"][4] == (5, pytest.approx(0.35))
    assert log.series["reward"][0] == (1, pytest.approx(0.22)) and log.series["grad_norm"][0] == (1, 0.2)
    assert canonical_name("train/agg/all/agent/solved_none") is None  # only with its other half


def test_a_loops_own_step_counter_its_summary_row_and_its_settings(tmp_path):
    """A loop keys its rows by its own counter (outer_step, not step_time), ends its CSV with a summary row that has
    no step, and writes its settings into every JSON record beside the step's metrics."""
    path = tmp_path / "metrics.csv"
    path.write_text("event,step_time,outer_step,reward\n" + "".join(f"train,1.5,{10 * s},{s / 10}\n" for s in range(1, 7))
                    + "completed,9.0,,\n")
    log = read_source(str(path))
    assert [s for s, _ in log.series["reward"]] == [10, 20, 30, 40, 50, 60] and "step_time" in log.series
    assert any("no step" in said for said in log.said), log.said
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps({"config": {"learning_rate": 3e-7, "beta": 0.0}, "metrics": {"reward": s / 10},
                                        "split": "train", "step": s}) + "\n" for s in range(1, 7)))
    log = read_source(str(path))
    assert log.series["reward"][1] == (2, 0.2) and log.params["learning_rate"] == "3e-07"
    assert not any(key.startswith("config") for key in log.series)
    path.write_text("".join(json.dumps({"config": {"beta": 0.0}, "reward": s / 10, "step": s}) + "\n" for s in range(1, 7)))
    log = read_source(str(path))  # settings beside metrics that no envelope holds: still the run's params
    assert log.params["beta"] == "0.0" and not any(key.startswith("config") for key in log.series)


def test_a_loops_lines_without_a_step_are_read_in_order(tmp_path):
    """The same pairs printed every step with no step on the line, a dict of sums over a count among them, and an
    evaluation printed between them, read at the step before it; the sample lines a loop prints are no step."""
    path = tmp_path / "train.log"
    lines = []
    for s in range(1, 9):
        lines.append(f"2025-09-23 09:01:00,984 - train - INFO - rl_loss: 0.0{s}, token_entropy: {1 - s / 20}, "
                     f"reward_data: {{'total_num': 8, 'total_reward': {s}.0}}")
        lines.append("Sample: the answer is 4")
        if s % 4 == 0:
            lines.append(f"2025-09-23 09:02:07,510 - train - INFO - rollout batch {s} done, eval_acc: {s / 10}")
    path.write_text("\n".join(lines) + "\n")
    log = read_source(str(path))
    assert log.kind == "console" and log.series["reward"][2] == (3, 3 / 8) and len(log.series["reward"]) == 8
    assert log.series["eval_acc"] == [(4, 0.4), (8, 0.8)]


def test_rewards_a_loop_prints_as_torch_or_numpy_print_an_array_are_a_list(tmp_path):
    """simple_GRPO's generation worker prints each batch's rewards as torch prints a tensor, no step on the line
    (`time: 7.18s     rewards: tensor([...])`), and torch wraps a tensor of its 5 prompts x 8 answers over several
    lines; numpy prints an array without commas, wrapped too. Each printed batch is a step, read in order; its rewards'
    mean and spread are the step's; 40 rewards are several groups printed together, so no tie is read from them."""
    import random
    import statistics

    import numpy
    import torch

    rng = random.Random(0)
    batches = [[rng.choice((2.25, 0.25, -0.75, -2.0)) for _ in range(40)] for _ in range(8)]
    printers = {"torch": lambda rewards: str(torch.tensor(rewards)),
                "cuda": lambda rewards: str(torch.tensor(rewards))[:-1] + ", device='cuda:0')",
                "numpy": lambda rewards: str(numpy.array(rewards))}
    for name, printed in printers.items():
        lines = ["INFO 02-18 10:01:12 llm_engine.py:232] Initializing a V1 LLM engine (v0.7.2) with config: ..."]
        for batch, rewards in enumerate(batches):
            lines.append(f"time: {rng.uniform(2, 9):.2f}s     rewards: {printed(rewards)}")
            if batch % 5 == 0:
                lines.append("answers: <think>48 / 2 = 24</think><answer>24</answer>")
        assert "\n" in printed(batches[0]), name  # wrapped over several lines, as printed
        path = tmp_path / f"{name}.log"
        path.write_text("\n".join(lines) + "\n")
        log = read_source(str(path))
        assert [step for step, _ in log.series["rewards"]] == list(range(1, 9)), name
        assert dict(log.series["rewards"])[3] == pytest.approx(statistics.fmean(batches[2])), name
        assert dict(log.series["reward_std"])[3] == pytest.approx(statistics.pstdev(batches[2])), name
        assert "frac_reward_zero_std" not in log.series, name


def test_a_bracket_of_numbers_never_closed_is_read_in_time(tmp_path):
    """A log cut off inside a printed list (40,000 lines of numbers after a '[' that never closes) is read in well
    under a second a megabyte: joining wrapped arrays reads it line by line, not by trying every split of its lines
    (which took minutes)."""
    import time

    path = tmp_path / "train.log"
    path.write_text("".join(f"step {s} loss={s / 100} reward=0.{s}\n" for s in range(1, 9)) + "rewards: [" + "1.0 \n" * 40_000)
    started = time.perf_counter()
    log = read_source(str(path))
    assert time.perf_counter() - started < 3 and len(log.series["reward"]) == 8


def test_an_mlflow_file_store_a_repository_keeps_is_read_through_mlflow(tmp_path, monkeypatch):
    """A run logged to ./mlruns (MLflow's file store, as TRL's MLflow callback left it before MLflow 3 made a database
    the default) and committed with the repository: the mlruns/ folder, or one run's folder in it, is read through
    MLflow, and the reading leaves MLflow's opt-in to its file store as it found it."""
    import mlflow

    store = tmp_path / "mlruns"
    with monkeypatch.context() as patched:
        patched.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
        mlflow.set_tracking_uri(store.as_uri())
        with mlflow.start_run() as run:
            for s in range(1, 9):
                mlflow.log_metrics({"reward": s / 10, "kl": 0.001 * s}, step=s)
            mlflow.log_params({"learning_rate": "1e-06", "beta": "0.04"})
        mlflow.set_tracking_uri(None)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    for source in (store, next(store.rglob(run.info.run_id))):
        log = read_source(str(source))
        assert log.kind == "mlflow" and log.series["reward"][2] == (3, 0.3) and log.params["beta"] == "0.04"
    assert "MLFLOW_ALLOW_FILE_STORE" not in os.environ


def test_json_records_one_per_line(tmp_path):
    path = tmp_path / "wandb-history.jsonl"
    path.write_text("".join(json.dumps({"_step": s - 1, "train/global_step": s, "train/reward": s / 10,
                                        "train/kl": None}) + "\n" for s in range(1, 6)) + '{"_step": 5, "train/')
    log = read_source(str(path))
    assert log.series["train/reward"] == [(s, s / 10) for s in range(1, 6)]  # the trainer's step, not W&B's row


def test_a_loops_json_dump_of_its_run_is_read_from_the_tables_in_it(tmp_path):
    """A loop that `json.dump`s its run at the end keeps its steps in the shape it built them: records under a key
    beside its settings, one list per pass, one list of values per metric with its step list, an object down."""
    steps = [{"step": 10 * s, "reward": s / 10, "kl": 0.01 * s} for s in range(1, 7)]
    shapes = {
        "history.json": {"config": {"beta": 0.04, "learning_rate": 1e-6}, "history": steps, "final_reward": 0.6},
        "passes.json": {"train": steps, "eval": [{"step": 30, "reward": 0.5}, {"step": 60, "reward": 0.7},
                                                {"step": 90, "reward": 0.8}]},
        "columns.json": {"results": {"metrics": {"step": [10 * s for s in range(1, 7)],
                                                 "reward": [s / 10 for s in range(1, 7)],
                                                 "kl": [0.01 * s for s in range(1, 7)]}}},
    }
    for name, content in shapes.items():
        path = tmp_path / name
        path.write_text(json.dumps(content))
        log = read_source(str(path))
        assert log.series["reward"] == [(10 * s, s / 10) for s in range(1, 7)], (name, log.series)
        assert "final_reward" not in log.series and not log.params.get(STEPS_ASSUMED), name
        assert any(said.startswith(f"{name} is one JSON object holding its steps under") for said in log.said), log.said
    assert read_source(str(tmp_path / "history.json")).params["beta"] == "0.04"
    assert read_source(str(tmp_path / "passes.json")).series["eval/reward"] == [(30, 0.5), (60, 0.7), (90, 0.8)]
    marked = tmp_path / "marked.json"  # an evaluation table whose records also say they are one
    marked.write_text(json.dumps({"train": steps, "eval": [{"type": "eval", "step": 30 * s, "reward": 0.5}
                                                           for s in range(1, 4)]}))
    assert read_source(str(marked)).series["eval/reward"][0] == (30, 0.5)
    # two training tables that log the same name keep it under their keys; lists of values without steps are numbered
    both = tmp_path / "both.json"
    both.write_text(json.dumps({"rollout": [{"reward": s / 10} for s in range(1, 5)],
                                "update": {"reward": [0.5, 0.6, 0.7, 0.8], "loss": [0.1, 0.2, 0.3, 0.4]}}))
    log = read_source(str(both))
    assert log.series["rollout/reward"][0] == (1, 0.1) and log.series["update/reward"][-1] == (4, 0.8)
    assert log.series["loss"][0] == (1, 0.1) and log.params[STEPS_ASSUMED] == "1"
    # an object with no table in it is still one record
    single = tmp_path / "single.json"
    single.write_text(json.dumps({"reward": 0.5, "range": [0, 1]}))
    assert read_source(str(single)).series["reward"] == [(1, 0.5)]
    # a run stopped after its first steps keeps a short history; an object of neither is said to be neither
    short = tmp_path / "short.json"
    short.write_text(json.dumps({"config": {"beta": 0.04}, "history": steps[:2]}))
    assert read_source(str(short)).series["reward"] == [(10, 0.1), (20, 0.2)]
    for content in ({"reward": [0.1, 0.2], "loss": [0.3, 0.2]}, {"model": "Qwen2.5-0.5B", "notes": "first try"}):
        single.write_text(json.dumps(content))
        with pytest.raises(HypotrackError, match=r"single.json: one JSON object with no metric in it: no number "
                                                 rf"under its keys \({', '.join(content)}\)"):
            read_source(str(single))
    summary = tmp_path / "train_results.json"  # what trainer.save_metrics("train", ...) writes at the end
    summary.write_text(json.dumps({"epoch": 1.0, "train_loss": 0.012, "train_runtime": 3600.1, "train_samples": 7473}))
    with pytest.raises(HypotrackError, match="train_results.json: transformers' end-of-training summary"):
        read_source(str(summary))


def test_tinker_cookbook_metrics_are_the_roles_triage_reads(tmp_path):
    """Tinker's RL loop (metrics.jsonl of its cookbook, as public runs keep it): the total reward, the rate, the
    entropy, and the share of mixed groups, which is TRL's share of tied ones turned around."""
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps({"step": s, "optim/lr": 4e-5, "env/all/reward/total": 0.5 + s / 100,
                                        "env/all/by_group/frac_mixed": 0.75, "optim/entropy": 0.5,
                                        "optim/kl_sample_train_v1": 1e-3, "env/all/ac_tokens_per_turn": 300.0,
                                        "test/env/all/reward/total": 0.6}) + "\n" for s in range(12)))
    from hypotrack.triage.keys import canonical

    named = canonical(read_source(str(path)))
    assert named.log.series["reward"][1] == (1, 0.51) and named.log.series["learning_rate"][0] == (0, 4e-5)
    assert named.log.series["frac_reward_zero_std"][0] == (0, 0.25)  # 1 - frac_mixed
    assert named.log.series["entropy"][0] == (0, 0.5) and "completions/mean_length" in named.log.series
    # the sampler-trainer mismatch is not a KL to a reference; the held-out pass is not training
    assert "kl" not in named.log.series
    assert {"optim/kl_sample_train_v1", "test/env/all/reward/total"} <= set(named.ignored)


def test_a_hand_written_loops_step_key_and_evaluation_records(tmp_path):
    """A loop that numbers its records by grpo_step and logs its evaluation passes among them ("type": "eval"):
    steps are the loop's, and the evaluation's reward is kept apart from training's."""
    path = tmp_path / "metrics.jsonl"
    lines = []
    for step in range(1, 9):
        if step % 4 == 1:
            lines.append({"type": "eval", "grpo_step": step - 1, "reward": 0.9})
        lines.append({"type": "rollout", "grpo_step": step, "reward": step / 100, "mean_reward": step / 100,
                      "avg_response_token_length": 300.0})
        lines.append({"type": "train", "grpo_step": step, "grad_norm": 0.3, "token_entropy": 0.9})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    log = read_source(str(path))
    assert log.series["reward"] == [(s, s / 100) for s in range(1, 9)]  # 8 steps, not 18 records
    assert log.series["eval/reward"] == [(0, 0.9), (4, 0.9)]
    assert canonical_name("token_entropy") == "entropy" and canonical_name("mean_reward") == "reward"
    csv = tmp_path / "metrics.csv"
    csv.write_text("iteration,timestamp,loss,mean_reward,std_reward\n"
                   + "".join(f"{i},2026-04-26T03:38:38,0.1,{i / 10},0.2\n" for i in range(1, 7)))
    assert read_source(str(csv)).series["mean_reward"][-1] == (6, 0.6)


def test_a_loops_end_of_run_summary_record_is_not_a_step(tmp_path):
    """A loop that ends its metrics file with a summary of the run (totals and a mean over the whole run, no step):
    among records that carry a step it is no step (as a CSV's row without one), not a step read at its position in
    the file, whose mean training reward would be the task reward's one point. Where most records carry no step,
    each is still read at its position."""
    path = tmp_path / "metrics.jsonl"
    steps = [{"event": "train", "outer_step": 10 * s, "reward": s / 10, "loss": 0.01} for s in range(1, 7)]
    summary = {"event": "completed", "outer_steps": 60, "total_rollouts": 4000, "mean_training_reward": 0.36}
    path.write_text("".join(json.dumps(record) + "\n" for record in [*steps, summary]))
    read = read_source(str(path))
    assert canonical(read).log.series["reward"] == [(10 * s, s / 10) for s in range(1, 7)]
    assert "mean_training_reward" not in read.series and canonical_name("mean_training_reward") == "reward"
    assert any(said.startswith("1 of the 7 records carry no step where the others do") and "left out" in said
               for said in read.said), read.said
    stepless = tmp_path / "stepless.jsonl"
    stepless.write_text("".join(json.dumps({"reward": r}) + "\n" for r in (0.1, 0.2, 0.3)) + json.dumps({"kl": 0.1}))
    assert read_source(str(stepless)).series["kl"] == [(4, 0.1)]


def test_a_folders_evaluation_log_is_read_into_the_training_log_its_name_pairs_with(tmp_path, run_cli):
    """A loop that writes train_metrics.jsonl and eval_metrics.jsonl side by side: one run, whose evaluation passes
    are its held-out score, not two runs (a training log beside it named otherwise stays a run of its own); a loop's
    reward before normalisation (raw_reward) is the reward, and its wrapped token entropy the entropy."""
    run = tmp_path / "grpo_math"
    run.mkdir()
    (run / "train_metrics.jsonl").write_text("".join(json.dumps(
        {"train_step": step, "train/raw_reward_mean": 0.1 + step / 100, "train/avg_token_entropy": 0.8,
         "train/grad_norm": 0.4}) + "\n" for step in range(1, 41)))
    (run / "eval_metrics.jsonl").write_text("".join(json.dumps(
        {"eval_step": step, "reward_mean": 0.05 + step / 100, "answer_reward_mean": 0.05 + step / 100,
         "num_examples": 1024}) + "\n" for step in range(0, 41, 5)))
    logs = read_runs(str(run))
    assert len(logs) == 1 and not logs[0].run
    log = logs[0]
    assert log.series["eval/reward_mean"][-1] == (40, 0.45) and log.series["train/raw_reward_mean"][0] == (1, 0.11)
    assert any(said.startswith("read eval_metrics.jsonl as the evaluation passes of train_metrics.jsonl")
               for said in log.said)
    named = canonical(log).log
    assert named.series["reward"][0] == (1, 0.11) and "entropy" in named.series
    report = json.loads(run_cli("triage", str(run), "--json").stdout)
    assert report["progress"]["heldout"] and report["progress"]["metric"] == "eval/reward_mean", report["progress"]
    assert report["progress"]["state"] == "learning"
    (run / "baseline.jsonl").write_text((run / "train_metrics.jsonl").read_text())
    assert sorted(log.run for log in read_runs(str(run))) == ["baseline.jsonl", "train_metrics.jsonl"]


def test_a_metric_not_computable_at_some_steps_is_no_divergence():
    """NaN at a metric's first steps, before any finite value (a loop's token entropy on the steps where every group
    tied and no token trained), or at steps among finite ones with finite values after, is no divergence: a
    divergence breaks a metric that was finite and leaves it NaN or infinite."""
    log = RunLog(source="loop", kind="jsonl")
    for step in range(1, 41):
        log.add("token_entropy", step, math.nan if step <= 10 else 0.9 - step / 100)
        log.add("grad_norm", step, 0.0 if step <= 10 else 0.5)
        log.add("reward", step, 0.0 if step <= 10 else step / 100)
        log.add("kl", step, math.nan if step in (20, 24, 31, 36) else 0.01)
    said = log.findings(is_training_metric)
    assert log.diverged_at(is_training_metric) is None, said
    assert any(f.startswith("token_entropy was NaN at steps 1, 2, 3, 4, 5 ... (10 of 40 logged steps) from its first")
               for f in said), said
    assert any(f.startswith("kl was NaN at steps 20, 24, 31, 36 (4 of 40 logged steps) with finite values between")
               for f in said), said
    broken = RunLog(source="loop", kind="jsonl")
    for step in range(1, 41):
        broken.add("kl", step, 0.01 if step < 30 else (math.nan if step % 5 else 0.02))
    assert broken.diverged_at(is_training_metric) == ("kl", 31)
    late = RunLog(source="loop", kind="jsonl")  # not computable at its first step, then finite, then broken for good
    for step in range(1, 41):
        late.add("token_entropy", step, math.nan if step == 1 or step > 30 else 0.9)
    assert late.diverged_at(is_training_metric) == ("token_entropy", 31)


def test_a_folder_of_wandb_panel_downloads_is_the_runs_they_are_of(tmp_path):
    """W&B's "Download CSV" of each panel writes a metric a file ("Step","<run> - <metric>", its __MIN and __MAX): a
    folder of them is the runs named in them, each read with all its metrics, not a run a file."""
    folder = tmp_path / "wandb_csv"
    folder.mkdir()
    for name, metric, value in (("reward.csv", "train/reward", lambda s: s / 100),
                                ("entropy.csv", "actor/entropy", lambda s: 0.4),
                                ("test_acc.csv", "val-core/gsm8k/acc/mean@1", lambda s: 0.3 + s / 100)):
        header = [f'"{run} - {metric}{end}"' for run in ("grpo", "treerl") for end in ("", "__MIN", "__MAX")]
        rows = [",".join([f'"{s}"'] + [f'"{value(s)}"'] * 6) for s in range(0, 40, 2)]
        (folder / name).write_text("\n".join(['"Step",' + ",".join(header), *rows]) + "\n")
    logs = read_runs(str(folder))
    assert sorted(log.run for log in logs) == ["grpo", "treerl"], [log.run for log in logs]
    for log in logs:
        assert {"train/reward", "actor/entropy", "val-core/gsm8k/acc/mean@1"} <= set(log.series), sorted(log.series)
        assert any("they hold its other metrics" in said for said in log.said)


def test_a_loops_per_function_rewards_beside_their_total_are_its_reward_functions():
    """A loop that logs format_reward and answer_reward beside the reward they sum to: TRL's rewards/<func>/mean, so
    the task reward is chosen among them; a statistic of the total (max_reward), the total itself (raw_reward) and
    a term no reward function scores (kl_reward) are not reward functions."""
    assert canonical_name("mean_format_reward") == "rewards/format/mean"
    assert canonical_name("train_answer_reward") == "rewards/answer/mean"
    assert canonical_name("correctness_reward") == "rewards/correctness/mean"
    assert canonical_name("train/raw_reward_mean") == canonical_name("total_reward") == "reward"
    assert canonical_name("max_reward") is None and canonical_name("kl_reward") is None
    assert canonical_name("eval_answer_reward") is None  # an evaluation pass's, read as the held-out score


def test_a_loops_share_of_completions_a_check_scored_right_is_that_checks_reward():
    """A loop that logs answer_accuracy or a pass rate beside its reward logs what its check of the answer scored: a
    reward function's mean, named for its check (roles.py reads it as the task's); a count, a share of groups, a
    length, an evaluation's score or a check of the answer's form (format_accuracy: logged alone beside the total, it
    would be taken for the task's) is none."""
    assert canonical_name("answer_accuracy") == canonical_name("train_answer_accuracy") == "rewards/answer_accuracy/mean"
    assert canonical_name("format_accuracy") is None
    assert canonical_name("canonical_pass_rate") == "rewards/canonical_pass_rate/mean"
    assert canonical_name("train_success") == "rewards/success/mean"
    for other in ("num_correct", "all_correct_group_ratio", "correct_seq_len", "val_accuracy", "eval_accuracy"):
        assert canonical_name(other) is None, other


def test_a_loops_names_for_the_kl_estimator_the_completion_length_and_the_groups_that_varied():
    """kl_k3 (the k3 estimator of the KL to the reference, TRL's own), completion_mean_length and resp_len are TRL's
    kl and completions/mean_length; a share of groups whose rewards varied is one minus TRL's tied share."""
    assert canonical_name("kl_k3") == "kl"
    assert canonical_name("completion_mean_length") == canonical_name("resp_len") == "completions/mean_length"
    log = RunLog("loop", "jsonl")
    for step, varied in enumerate((1.0, 0.75, 0.25), start=1):
        log.add("variable_group_rate", step, varied)
        log.add("nonzero_variance_group_fraction", step, varied)
    assert canonical(log).log.series["frac_reward_zero_std"] == [(1, 0.0), (2, 0.25), (3, 0.75)]


def test_a_loops_csv_keyed_by_its_update_count_is_read_with_its_names(tmp_path):
    """A pipeline's per-update CSV: the `update` column is the step; its zero-advantage group share is TRL's tied
    share, its truncation rate the clipped share, and its policy_entropy_mean and grpo_loss the entropy and loss."""
    csv = tmp_path / "grpo_training_metrics.csv"
    csv.write_text("update,reward_mean,zero_advantage_group_fraction,truncation_rate,policy_entropy_mean,grpo_loss\n"
                   + "".join(f"{u},{u / 10},0.25,0.5,0.9,0.01\n" for u in range(1, 7)))
    log = canonical(read_source(str(csv))).log
    assert log.series["reward"][-1] == (6, 0.6) and log.series["frac_reward_zero_std"][0] == (1, 0.25)
    assert {"completions/clipped_ratio", "entropy", "loss"} <= set(log.series)


def test_openrlhfs_step_status_on_its_console_and_in_its_trackers(tmp_path):
    """OpenRLHF logs each step's status as `✨ Global step N: {...}` (its trainer's logger line) and, under "train/",
    to W&B and TensorBoard: the step is the one the line names, whatever progress bar printed before it, and its names
    are the roles triage reads (rollout/* the batch's statistics of newer releases)."""
    status = "{{'policy_loss': -0.01, 'actor_lr': 1e-06, 'actor_grad_norm': 0.31, 'ppo_clip_ratio': 0.002, " \
             "'ppo_kl': 0.0001, 'kl': {kl}, 'reward': {reward}, 'return': {reward}, 'response_length': 300.0, " \
             "'rollout/reward_mean': {reward}, 'rollout/truncated_rate': 0.01, 'timing/step_total': 111.4}}"
    path = tmp_path / "train.log"
    path.write_text("".join(
        f"Episode [1/1]:  {s}%|  | {s}/400 [01:00<10:00, 60s/it]\n"
        f"[2026-01-05 10:00:00,000] [INFO] [ppo_trainer.py:547:fit] ✨ Global step {2 * s}: "
        + status.format(kl=s / 1000, reward=0.2 + s / 50) + "\n" for s in range(1, 11)))
    log = read_source(str(path))
    assert log.series["reward"][2] == (6, 0.26) and log.series["kl"][-1] == (20, 0.01)
    assert not log.params.get(STEPS_ASSUMED)
    assert canonical_name("train/rollout/reward_mean") == "reward"
    assert canonical_name("train/rollout/truncated_rate") == "completions/clipped_ratio"
    assert canonical_name("train/ppo_clip_ratio") == "clip_ratio/region_mean"
    assert canonical_name("train/actor_grad_norm") == "grad_norm" and canonical_name("train/ppo_kl") is None


def test_a_resumed_runs_named_steps_are_read_from_its_last_segment_and_said(tmp_path):
    """A console whose dicts name their step (OpenRLHF's `Global step N: {...}`) and that holds a run resumed from a
    checkpoint prints the steps after the checkpoint again, with other values: the last ones are read, and the report
    says those steps were logged twice, as for any other source."""
    line = "[INFO] [ppo_trainer.py:547:fit] \u2728 Global step {s}: {{'policy_loss': -0.01, 'reward': {r}, 'kl': 0.01}}\n"
    path = tmp_path / "train.log"
    path.write_text("".join(line.format(s=s, r=0.1) for s in range(1, 13))
                    + "".join(line.format(s=s, r=0.5) for s in range(9, 21)))
    log = read_source(str(path))
    assert log.series["reward"][7] == (8, 0.1) and log.series["reward"][8] == (9, 0.5) and len(log.series["reward"]) == 20
    assert log.repeated == [9, 10, 11, 12]
    assert any("steps 9-12 logged more than once" in said for said in log.findings(is_training_metric))


def test_areals_actor_and_rollout_stats_are_the_roles_triage_reads(tmp_path):
    """AReaL logs its PPO actor's statistics under ppo_actor/ and its rollout workflow's under rollout/ (to W&B,
    TensorBoard and the tables of its main.log, which users extract to CSV): the task reward score, the entropy, the
    grad norm, the share of sequences that ran out of tokens, and its evaluation workflow's reward apart. Its seq_len
    counts the prompt too, so it is no completion length, and its approx_kl is the update's own step."""
    csv = tmp_path / "training_metrics.csv"
    header = ["step", "ppo_actor/task_reward/avg", "rollout/reward", "ppo_actor/update/entropy/avg",
              "ppo_actor/update/grad_norm", "ppo_actor/no_eos_ratios/avg", "ppo_actor/seq_len/avg",
              "ppo_actor/update/approx_kl/avg", "eval-rollout/reward"]
    csv.write_text(",".join(header) + "\n" + "".join(
        f"{s},{0.3 + s / 100},{0.3 + s / 100},0.4,0.2,0.05,900,0.001,{0.1 + s / 100 if s % 3 == 0 else ''}\n"
        for s in range(1, 10)))
    named = canonical(read_source(str(csv)))
    assert named.log.series["reward"][0] == (1, 0.31) and named.log.series["entropy"][0] == (1, 0.4)
    assert named.log.series["completions/clipped_ratio"][0] == (1, 0.05) and "grad_norm" in named.log.series
    assert {"ppo_actor/seq_len/avg", "ppo_actor/update/approx_kl/avg", "eval-rollout/reward"} <= set(named.ignored)
    from hypotrack.triage.heldout import heldout_score

    held = heldout_score(read_source(str(csv)), None)
    assert held is not None and held.metric == "eval-rollout/reward" and held.points[0] == (3, 0.13)


def test_areals_main_log_is_read_step_by_step_from_its_statistics_grids(tmp_path):
    """AReaL's main.log: per training step its StatsLogger says "Epoch 1/1 Step 3/12 Train step 3/12 done." and prints
    the step's statistics as a fancy_grid of name and value cells, four pairs a row, column-major, the last row padded
    with empty cells."""
    def grid(stats: dict[str, float]) -> str:
        items = list(stats.items())
        rows = [items[i::2] for i in range(2)]  # two rows, column-major, as tabulate_stats lays out 3-8 items
        width = 30
        lines = ["╒" + "╤".join("═" * width for _ in range(8)) + "╕"]
        for row in rows:
            cells = [text for name, value in row for text in (name, f"{value:.4e}")]
            lines.append("│ " + " │ ".join(cell.ljust(width - 2) for cell in cells + [""] * (8 - len(cells))) + " │")
        return "\n".join([*lines, "╘" + "╧".join("═" * width for _ in range(8)) + "╛"])

    path = tmp_path / "main.log"
    path.write_text("TrainController INFO: TrainController initialization complete\n" + "".join(
        f"StatsLogger INFO: Epoch 1/1 Step {s}/12 Train step {s}/12 done.\nStatsLogger INFO: Stats (1/1):\n"
        "StatsLogger INFO: \n" + grid({"ppo_actor/task_reward/avg": 0.3 + s / 50, "ppo_actor/update/entropy/avg": 0.5,
                                       "ppo_actor/update/grad_norm": 0.2, "ppo_actor/no_eos_ratios/avg": 0.05,
                                       "timeperf/train_step": 12.0}) + "\n" for s in range(1, 13)))
    named = canonical(read_source(str(path)))
    assert named.log.kind == "console"
    assert named.log.series["reward"] == [(s, pytest.approx(0.3 + s / 50)) for s in range(1, 13)]
    assert named.log.series["completions/clipped_ratio"][0] == (1, 0.05) and len(named.log.series["entropy"]) == 12


def test_tensorboards_scalar_downloads_are_read_as_the_runs_they_are_of(tmp_path, run_cli):
    """TensorBoard's "Download CSV" writes one tag a file, `run-<run>-tag-<tag>.csv` with each "/" as "_" (its
    "Download JSON", `.json`): a folder of them is one run a run name, one of them is read with its run's other tags,
    and the tags are TRL's names."""
    tags = {"train_reward": lambda s: 0.2 + s / 100, "train_kl": lambda s: s / 1000,
            "train_rewards_accuracy_reward_mean": lambda s: 0.1 + s / 100,
            "train_completions_mean_length": lambda s: 100.0, "train_frac_reward_zero_std": lambda s: 0.25}
    for run in ("grpo_a", "grpo_b"):
        for tag, value in tags.items():
            (tmp_path / f"run-{run}-tag-{tag}.csv").write_text(
                "Wall time,Step,Value\n" + "".join(f"{1.7e9 + s},{5 * s},{value(s)}\n" for s in range(1, 41)))
    logs = read_runs(str(tmp_path))
    assert [log.run for log in logs] == ["grpo_a", "grpo_b"]
    named = canonical(logs[0]).log.series
    assert named["rewards/accuracy_reward/mean"][0] == (5, 0.11) and named["kl"][-1] == (200, 0.04)
    assert {"reward", "completions/mean_length", "frac_reward_zero_std"} <= set(named)
    one = read_runs(str(tmp_path / "run-grpo_b-tag-train_kl.csv"))
    assert len(one) == 1 and set(one[0].series) == set(logs[1].series)
    result = run_cli("triage", tmp_path / "run-grpo_b-tag-train_reward.csv")
    assert result.returncode == 0 and "is learning" in result.stdout, result.stdout + result.stderr
    # its "Download JSON": the same points as [wall_time, step, value] lists, a tag a file, read the same way
    json_folder = tmp_path / "json"
    json_folder.mkdir()
    for tag, value in tags.items():
        (json_folder / f"run-grpo_a-tag-{tag}.json").write_text(
            json.dumps([[1.7e9 + s, 5 * s, value(s)] for s in range(1, 41)]))
    (json_folder / "notes.json").write_text(json.dumps([[1, 2], [3, 4]]))  # not a download: left alone
    downloaded = read_runs(str(json_folder / "run-grpo_a-tag-train_kl.json"))
    assert len(downloaded) == 1 and downloaded[0].series == logs[0].series
    assert read_source(str(json_folder)).series == logs[0].series
    # TensorBoard's dataframe export (experiment.get_scalars()): the long form, its tag column the key
    path = tmp_path / "scalars.csv"
    path.write_text("run,tag,step,value\n" + "".join(f"grpo_a,train/reward,{s},{0.2 + s / 100}\n"
                                                      for s in range(1, 21)))
    assert read_source(str(path)).series["train/reward"][1] == (2, 0.22)


def test_a_csv_a_loop_writes_without_a_step_column_and_its_shares_in_percent(tmp_path):
    """A loop that appends a row a step (epoch,reward,accuracy) and no step column: its rows are its steps, in the
    order the file holds them, each run's apart; a share written as '85.0%' is 0.85."""
    path = tmp_path / "metrics.csv"
    path.write_text("epoch,reward,accuracy\n" + "".join(f"{s / 100},{s / 10},{5 * s:.1f}%\n" for s in range(1, 9)))
    log = read_source(str(path))
    assert log.series["reward"] == [(s, s / 10) for s in range(1, 9)] and log.params[STEPS_ASSUMED] == "1"
    assert log.series["accuracy"][1] == (2, pytest.approx(0.1)) and log.series["epoch"][0] == (1, 0.01)
    assert any("no step column" in said and "its rows read as steps 1, 2, ..." in said for said in log.said)
    both = tmp_path / "runs.csv"
    both.write_text("run,reward\n" + "".join(f"{run},{s / 10}\n" for s in range(1, 6) for run in ("a", "b")))
    assert [log.series["reward"] for log in read_runs(str(both))] == [[(s, s / 10) for s in range(1, 6)]] * 2


def test_a_history_kept_as_parquet_is_read_as_the_same_table_in_a_csv(tmp_path):
    """W&B's run.history() saved with DataFrame.to_parquet: its step columns, its metrics (a missing value empty),
    its text columns no metric; a table of completions holds no metric, and a file that is no Parquet says so."""
    import pandas

    history = pandas.DataFrame({"_step": range(30), "train/global_step": range(1, 31),
                                "train/reward": [0.2 + s / 100 for s in range(30)],
                                "train/kl": [None if s == 3 else s / 1000 for s in range(30)], "note": ["x"] * 30})
    history.to_parquet(tmp_path / "history.parquet")
    history.to_csv(tmp_path / "history.csv", index=False)
    log, same = read_source(str(tmp_path / "history.parquet")), read_source(str(tmp_path / "history.csv"))
    assert log.kind == "parquet" and log.series == same.series and log.series["train/reward"][0] == (1, 0.2)
    assert 4 not in dict(log.series["train/kl"])
    history.set_index("_step").to_parquet(tmp_path / "indexed.parquet")  # the step kept as the frame's index
    indexed = read_source(str(tmp_path / "indexed.parquet")).series
    assert indexed["train/reward"] == log.series["train/reward"] and indexed["train/kl"] == log.series["train/kl"]
    pandas.DataFrame({"step": range(1, 4), "prompt": ["p"] * 3, "completion": ["c"] * 3}).to_parquet(
        tmp_path / "completions.parquet")
    with pytest.raises(HypotrackError, match=r"completions.parquet: no column of numbers besides its step 'step' "
                                             r"\(its other columns: prompt, completion\)"):
        read_source(str(tmp_path / "completions.parquet"))
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not a table")
    with pytest.raises(HypotrackError, match="broken.parquet: not a readable Parquet file"):
        read_source(str(tmp_path / "broken.parquet"))


def test_ms_swifts_logging_jsonl_its_console_and_its_args_json(tmp_path):
    """ms-swift (`swift rlhf --rlhf_type grpo`) writes each logged step, in its output folder's logging.jsonl and on
    the console, with its step as 'global_step/max_steps': '10/200', ends with transformers' summary, and keeps its
    settings in args.json beside it: the steps are its own, the summary is no step, and the settings are read."""
    rows = [{"loss": 0.001, "grad_norm": 0.4, "learning_rate": 1e-06, "memory(GiB)": 40.1, "reward": 0.3 + s / 100,
             "reward_std": 0.4, "rewards/MathAccuracy/mean": 0.2 + s / 100, "frac_reward_zero_std": 0.25, "kl": 0.01,
             "epoch": s / 100, "global_step/max_steps": f"{5 * s}/200", "percentage": f"{2.5 * s:.2f}%",
             "elapsed_time": "1h 2m", "remaining_time": "3h"} for s in range(1, 41)]
    summary = {"train_runtime": 3600.0, "train_loss": 0.001, "epoch": 0.4, "global_step/max_steps": "200/200",
               "memory(GiB)": 40.1, "train_speed(iter/s)": 0.05}
    run = tmp_path / "v0-20250101-120000"
    run.mkdir()
    (run / "logging.jsonl").write_text("".join(json.dumps(row) + "\n" for row in [*rows, summary]))
    (run / "args.json").write_text(json.dumps({"rlhf_type": "grpo", "output_dir": str(run), "learning_rate": 1e-6,
                                               "beta": 0.04, "num_generations": 8, "logging_steps": 5}))
    log = read_source(str(run))
    assert log.series["reward"][0] == (5, 0.31) and log.series["reward"][-1] == (200, 0.7)
    assert not log.repeated  # the summary at step 200 is no second step 200
    assert log.params["num_generations"] == "8" and log.params["beta"] == "0.04"
    console = tmp_path / "train.log"
    console.write_text("".join(f"Train:  {s}%|  | {s}/40 [00:10<...]\n{row}\n" for s, row in enumerate(rows, 1)))
    step, reward = read_source(str(console)).series["reward"][2]
    assert step == 15 and reward == pytest.approx(0.33)


def test_llama_factorys_trainer_log_counts_its_steps_as_current_steps(tmp_path):
    path = tmp_path / "trainer_log.jsonl"
    rows = [{"current_steps": 10 * s, "total_steps": 300, "loss": 0.1, "reward": s / 100, "lr": 1e-6, "epoch": s / 30,
             "percentage": 3.33 * s} for s in range(1, 31)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    log = read_source(str(path))
    assert log.series["reward"][1] == (20, 0.02) and not any("carry no step" in said for said in log.said)


def test_a_gzip_compressed_log_reads_as_the_file_it_holds(tmp_path, run_cli):
    """A large log kept compressed (train.log.gz, metrics.jsonl.gz) reads as the log it holds, named by the compressed
    file; one that does not decompress gets its sentence."""
    import gzip

    rows = [{"step": s, "reward": s / 100, "loss": 0.01, "kl": s / 1000} for s in range(1, 31)]
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "metrics.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in rows).encode()))
    log = read_source(str(folder))  # the folder's only log, by the name of the file it holds
    assert log.series["reward"][-1] == (30, 0.3) and log.source == str(folder / "metrics.jsonl.gz")
    assert any("gzip-compressed" in said for said in log.said), log.said
    console = tmp_path / "train.log.gz"
    console.write_bytes(gzip.compress("".join(f"{{'loss': 0.01, 'reward': {s / 100}, 'epoch': {s / 30:.3f}}}\n"
                                              for s in range(1, 31)).encode()))
    assert read_source(str(console)).kind == "console"
    broken = tmp_path / "cut.log.gz"
    broken.write_bytes(gzip.compress(b"{'loss': 0.01}\n" * 100)[:40])
    result = run_cli("triage", broken)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert f"{broken}: a gzip file that does not decompress whole" in result.stderr + result.stdout


@pytest.mark.parametrize("compress", ["bz2", "lzma"])
def test_a_bzip2_or_xz_compressed_log_reads_as_the_file_it_holds(tmp_path, compress):
    module = __import__(compress)
    suffix = {"bz2": ".bz2", "lzma": ".xz"}[compress]
    path = tmp_path / f"train.log{suffix}"
    path.write_bytes(module.compress("".join(f"{{'loss': 0.01, 'reward': {s / 100}, 'epoch': {s / 30:.3f}}}\n"
                                             for s in range(1, 31)).encode()))
    log = read_source(str(path))
    assert log.kind == "console" and log.series["reward"][-1][1] == 0.3 and log.source == str(path)


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_an_archive_of_a_runs_folder_reads_as_that_folder(tmp_path, kind, run_cli):
    """A run's folder attached as an archive (`zip -r run.zip outputs/`, `tar czf run.tar.gz outputs/`) reads as the
    folder: its checkpoint's trainer_state.json, named by the archive; a member whose name leads out of the archive
    is never written there, and an archive that would unpack to more than a run's logs gets its sentence."""
    import tarfile
    import zipfile

    from hypotrack.triage import compressed

    state = json.dumps({"log_history": [{"step": s, "loss": 0.01, "reward": s / 100, "kl": s / 1000}
                                        for s in range(1, 21)]})
    path = tmp_path / f"outputs.{kind}"
    member = "outputs/checkpoint-20/trainer_state.json"
    if kind == "zip":
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr(member, state)
            archive.writestr("../escaped.log", "{'loss': 0.01, 'reward': 0.5, 'epoch': 0.1}\n")
    else:
        (tmp_path / "src" / "outputs" / "checkpoint-20").mkdir(parents=True)
        (tmp_path / "src" / member).write_text(state)
        with tarfile.open(path, "w:gz") as archive:
            archive.add(tmp_path / "src" / "outputs", arcname="outputs")
    log = read_source(str(path))
    assert log.series["reward"][-1] == (20, 0.2) and str(path) in log.source
    assert any("an archive, as the folder it holds" in said for said in log.said), log.said
    assert not (tmp_path / "escaped.log").exists() and not (tmp_path.parent / "escaped.log").exists()
    if kind == "tar.gz":
        evil = tmp_path / "evil.tar"
        with tarfile.open(evil, "w") as archive:
            info = tarfile.TarInfo("../escaped.log")
            info.size = 4
            archive.addfile(info, __import__("io").BytesIO(b"0.01"))
        result = run_cli("triage", evil)
        assert result.returncode != 0 and "Traceback" not in result.stderr
        assert "an archive that does not unpack whole" in result.stderr + result.stdout
        assert not (tmp_path / "escaped.log").exists()
    original = compressed.ARCHIVE_MAX_BYTES
    compressed.ARCHIVE_MAX_BYTES = 10
    try:
        with pytest.raises(HypotrackError, match="more than a run's logs"):
            read_source(str(path))
    finally:
        compressed.ARCHIVE_MAX_BYTES = original


def _progress_table(steps: range) -> str:
    """The table transformers' NotebookProgressCallback draws, with every metric as Unsloth shows them."""
    names = ["Step", "Training Loss", "reward", "reward_std", "completions / mean_length", "kl",
             "rewards / correctness_reward_func / mean", "sampling / sampling_logp_difference / mean"]
    head = "".join(f"      <th>{name}</th>\n" for name in names)
    rows = "".join("    <tr>\n" + "".join(f"      <td>{cell}</td>\n" for cell in (
        s, "0.000100", f"{s / 100:.6f}", "0.400000", "300.000000", f"{s / 1000:.6f}", f"{s / 200:.6f}", "No Log"))
        + "    </tr>\n" for s in steps)
    return ("<div>\n  <progress value='30' max='30'></progress>\n  [30/30 1:00:00, Epoch 0/1]\n</div>\n"
            '<table border="1" class="dataframe">\n  <thead>\n <tr style="text-align: left;">\n' + head
            + "    </tr>\n  </thead>\n  <tbody>\n" + rows + "  </tbody>\n</table><p>")


def test_a_notebooks_saved_outputs_and_the_trainers_progress_table(tmp_path, run_cli):
    """A Colab run of Unsloth's GRPO committed with its outputs: the progress table the Trainer drew (the metrics with
    " / " for "/", "No Log" where a metric was not logged) is the run's log, in the .ipynb and in its Markdown export;
    a notebook saved without outputs says so."""
    cells = [{"cell_type": "code", "source": ["trainer.train()"], "outputs": [
        {"output_type": "stream", "name": "stdout", "text": ["==((====))==  Unsloth - 2x faster free finetuning\n"]},
        {"output_type": "display_data", "data": {"text/html": _progress_table(range(1, 31)).splitlines(True),
                                                  "text/plain": ["<IPython.core.display.HTML object>"]}}]}]
    notebook = tmp_path / "grpo.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    named = canonical(read_source(str(notebook))).log.series
    assert named["reward"][2] == (3, 0.03) and named["rewards/correctness_reward_func/mean"][-1] == (30, 0.15)
    # the folder a notebook was committed in, with nothing else in it, is read through it
    assert canonical(read_source(str(tmp_path))).log.series["reward"] == named["reward"]
    assert named["loss"][0] == (1, 0.0001) and named["completions/mean_length"][0] == (1, 300.0)
    assert "sampling/sampling_logp_difference/mean" not in named  # "No Log" at every step
    exported = tmp_path / "grpo.md"
    exported.write_text("# GRPO\n\n```python\ntrainer.train()\n```\n\n" + _progress_table(range(1, 31)))
    assert read_source(str(exported)).series["reward"][-1] == (30, 0.3)
    # a folder whose only log is such a page (a run's files zipped with its terminal capture), beside other pages
    pasted = tmp_path / "pasted"
    pasted.mkdir()
    (pasted / "README.md").write_text("# Notes\n\nThe run looked fine.\n")
    exported.rename(pasted / "terminal.md")
    log = read_source(str(pasted))
    assert log.series["reward"][-1] == (30, 0.3) and any("read terminal.md" in said for said in log.said), log.said
    empty = tmp_path / "empty.ipynb"
    empty.write_text(json.dumps({"cells": [{"cell_type": "code", "source": [], "outputs": []}], "nbformat": 4}))
    result = run_cli("triage", empty)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "a notebook saved without its cells' outputs" in result.stderr + result.stdout


def test_grpo_updates_between_generations_are_the_same_training(tmp_path):
    """TRL logs the rewards at the steps that generate: with num_iterations 4 three updates in four print kl and clip
    ratios without them (and newer transformers print every value as a string). One training, not a supervised
    stage before each generation."""
    def printed(step: int) -> str:
        values = {"loss": f"{0.05 - step / 1000:.4g}", "grad_norm": "0.3", "learning_rate": f"{1e-6 * (1 - step / 40):.4g}"}
        if step % 4 == 1:
            values |= {"rewards/reward_func/mean": f"{0.2 + step / 100:.4g}", "reward": f"{0.2 + step / 100:.4g}",
                       "reward_std": "0.19", "frac_reward_zero_std": "0"}
        values |= {"kl": f"{0.002 + step / 1e4:.4g}", "entropy": "0.6", "clip_ratio/region_mean": "0.012",
                   "epoch": f"{step / 500:.4g}"}
        return str(values)

    path = tmp_path / "probe.log"
    path.write_text("".join(printed(step) + "\n" for step in range(1, 33)) + "{'train_runtime': '916.1'}\n")
    log = read_source(str(path))
    assert [step for step, _ in log.series["reward"]] == list(range(1, 33, 4)), log.series["reward"]
    assert len(log.series["kl"]) == 32 and log.series["reward"][-1] == (29, pytest.approx(0.49))
    assert not log.params.get(PRIOR_TRAINING) and not any("trainings" in said for said in log.said), log.said


def test_a_console_log_of_an_sft_warm_up_then_grpo_reads_the_grpo_training(tmp_path):
    """An Unsloth-style script prints its SFT warm-up's dicts, then GRPO's, in one log: the GRPO training is read,
    on its own steps, and the report says what was left out."""
    sft = "".join(f"{{'loss': {2.0 / s:.3f}, 'grad_norm': 1.5, 'learning_rate': {2e-4 * (1 - s / 11):.2e}, "
                  f"'epoch': {s / 5:.2f}}}\n" for s in range(1, 11))
    grpo = "".join(f" {5 * s}/100 [00:{s:02d}<01:00, 1.0s/it]{{'loss': 0.01, 'grad_norm': 0.2, 'learning_rate': 1e-05, "
                   f"'reward': {0.4 + s / 100:.3f}, 'reward_std': 0.3, 'frac_reward_zero_std': 0.5, 'epoch': {s / 20:.2f}}}\n"
                   for s in range(1, 13))
    path = tmp_path / "train.log"
    path.write_text("Unsloth: fine-tuning\n" + sft + "GRPO starts\n" + grpo)
    log = read_source(str(path))
    assert log.series["reward"][0] == (5, 0.41) and len(log.series["reward"]) == 12
    assert len(log.series["learning_rate"]) == 12  # the warm-up's decaying rate is not GRPO's schedule
    assert any("2 trainings" in said and "10 logged steps of another training" in said for said in log.said), log.said
    # the GRPO run starts from the warm-up's policy: its first step's KL is not read as the reference's
    assert log.params.get(PRIOR_TRAINING) and any("supervised stage" in said for said in log.said), log.said
    path.write_text("GRPO starts\n" + grpo + "SFT after it\n" + sft)  # a training after the GRPO one is no stage before it
    log = read_source(str(path))
    assert len(log.series["reward"]) == 12 and not log.params.get(PRIOR_TRAINING), log.said


@pytest.mark.parametrize("line", ["[xlam100] {s:3d}/100 | loss={loss:.4f} | reward={reward:.3f}",
                                  "step {s} loss={loss:.4f} reward={reward:.3f} kl=0.001",
                                  "2026-04-26 03:38:38 INFO step={s}: reward={reward:.3f}, loss={loss:.4f}"])
def test_a_hand_written_loops_progress_lines(tmp_path, line):
    """A loop that prints one line a step, its step and key=value pairs, whatever the wrapping."""
    path = tmp_path / "train.log"
    path.write_text("loading data...\n" + "".join(line.format(s=s, loss=-s / 100, reward=s / 50) + "\n"
                                                for s in range(1, 11)) + "  -> ckpt s10\n")
    log = read_source(str(path))
    assert log.kind == "console" and log.series["reward"][2] == (3, 0.06) and log.series["loss"][0] == (1, -0.01)


@pytest.mark.parametrize("line", [
    "Epoch:[1/1]({s}/500), Reward: {reward:.4f}, KL_ref: 0.0004, Adv Std: 0.92, Actor Loss: {loss:.4f}, Avg Len: 129",
    "GRPO step {s}/500 | loss: {loss:.4f} | mean_reward: {reward:.4f} | KL: 0.0001 | clip_frac: 0.000 | lr: 0.000001",
    "2026-04-26 03:38:38,120 - INFO - Step {s}: loss: {loss:.4f} mean_reward: {reward:.4f} kl: 0.01",
    "[{s}/10] - loss: {loss:.4f} - mean_reward: {reward:.4f} - grad_norm: 0.3",
])
def test_a_loops_name_colon_value_lines(tmp_path, line):
    """A loop that prints `Name: value` pairs after its step: names of words are read as keys (`Avg Len` is
    avg_len, the completions' mean length), the step is the count of the run's steps (not the epoch's 1/1), and a
    count printed after the pairs (`(1/2 rendered)`) is no step."""
    path = tmp_path / "train.log"
    steps = "".join(f"  Rewards: [0.5, -1.0] ({s % 3}/2 rendered)\n" + line.format(s=s, loss=-s / 100, reward=s / 50)
                    + "\n" for s in range(1, 11))
    path.write_text("Model Params: 30.03M\n" + steps)
    log = read_source(str(path))
    assert log.kind == "console" and [step for step, _ in log.series["actor_loss" if "Epoch" in line else "loss"]] \
        == list(range(1, 11))
    reward = log.series["reward" if "Epoch" in line else "mean_reward"]
    assert reward[2] == (3, 0.06) and len(reward) == 10
    assert canonical_name("kl_ref") == "kl" and canonical_name("avg_len") == "completions/mean_length"
    assert canonical_name("actor_loss") == "loss" and canonical_name("clip_frac") == "clip_ratio/region_mean"


def test_a_loops_short_names_for_a_whole_step_on_one_line(tmp_path):
    """A loop that fits a whole step on one line shortens its names (grad, syntax_rew, frac_zero_std): they are the
    grad norm, a reward function and TRL's share of tied groups; the reward's printed spread (0.412±0.100) leaves
    the mean."""
    path = tmp_path / "learning.log"
    path.write_text("".join(f"[Epoch {s / 50:.2f}]  loss=0.0100  grad=0.4500  lr=1.00e-06  reward={0.3 + s / 100:.3f}"
                            f"±0.100  syntax_rew={s / 200:.3f}±0.050  entropy=0.500  frac_zero_std=0.25\n"
                            for s in range(1, 11)))
    log = canonical(read_source(str(path))).log
    assert log.series["reward"][2][1] == pytest.approx(0.33)
    assert log.series["grad_norm"][0][1] == pytest.approx(0.45)
    assert log.series["frac_reward_zero_std"][0][1] == pytest.approx(0.25)
    assert log.series["rewards/syntax/mean"][9][1] == pytest.approx(0.05)


@pytest.mark.parametrize("line, steps", [
    ("Step {s} - Mean Reward {reward:.4f} - Mean Response Len 120 - Mean Loss {loss:.4f}", "own"),
    ("Iteration {s} | average reward {reward:.3f} | kl 0.0010", "own"),
    ("Step {s}: avg reward {reward:.3f}, avg response len 201.0", "own"),
    ("  epoch {s:3d}  mean reward {reward:+.3f}  lr 0.0010", "in order"),
])
def test_a_loops_name_value_lines_without_a_sign_between(tmp_path, line, steps):
    """A loop that prints `Name value` with only spaces between them, its pairs set apart by " - ", "|", "," or a
    wide gap: the names are read as keys (`average reward` is the reward, `Mean Response Len` the completions'
    length; a bare `length` is not, as a loop's `rollout batch 3 generated, length: 256` counts its rollouts),
    the step where the line names one, else the lines in order."""
    path = tmp_path / "train.log"
    path.write_text("Loading 3 shards\n" + "".join(line.format(s=s, loss=-s / 100, reward=s / 50) + "\n"
                                                 for s in range(3, 13)))
    log = canonical(read_source(str(path))).log
    reward = log.series["reward"]
    assert len(reward) == 10 and reward[2][1] == pytest.approx(0.1)
    assert [step for step, _ in reward] == (list(range(3, 13)) if steps == "own" else list(range(1, 11)))
    assert (STEPS_ASSUMED in log.params) == (steps == "in order")
    if "esponse" in line:
        assert "completions/mean_length" in log.series


def test_a_loops_step_blocks_are_read_one_quantity_a_line(tmp_path):
    """A loop that prints a step as a block of lines: the line that opens it ("Step 3: sampled", "=== ROLLOUT
    DETAILS (Step 3) ==="), then one quantity a line, echoed with a logger's prefix. A name printed more than once
    in a block is a sample's ("[Sample 2] Reward:", "K=1, Reward=") and left out; a statistics line ("Rewards:
    min=.., mean=.., std=..") gives each statistic; an evaluation's block keeps its quantities as the held-out
    score's; camelCase names are words (GradNorm is grad_norm)."""
    def block(s):
        lines = [f"Step {s}: Sampled 2 prompts", "  K=1, Reward=1.000", "  K=1, Reward=0.212",
                 f"=== ROLLOUT DETAILS (Step {s}) ===", "[Sample 1] Reward: 1.000", "[Sample 2] Reward: 0.212",
                 f"Rewards: min=0.212, max=1.000, mean={s / 20:.3f}, std=0.381", f"Step {s} | Time: 17.28s",
                 f"  Loss: {-s / 100:.4f}", f"  KL Divergence: {s / 1000:.4f}", "  GradNorm: 0.53"]
        if s % 5 == 0:
            lines += [f"=== EVALUATION (Step {s}) ===", f"Accuracy: {s / 40:.3f}"]
        return "".join(f"{line}\n2025-08-27 18:48:51,115 | grpo_training | INFO | {line}\n" for line in lines)

    path = tmp_path / "training_output.txt"
    path.write_text("Loaded 200 training samples\n" + "".join(block(s) for s in range(1, 11)))
    log = read_source(str(path))
    assert log.kind == "console" and [step for step, _ in log.series["rewards_mean"]] == list(range(1, 11))
    assert log.series["rewards_mean"][2] == (3, 0.15) and log.series["rewards_std"][0] == (1, 0.381)
    assert log.series["loss"][9] == (10, -0.1) and log.series["grad_norm"][0] == (1, 0.53)
    assert "reward" not in log.series and log.series["eval/accuracy"] == [(5, 0.125), (10, 0.25)]
    named = canonical(log)
    assert named.renamed["rewards_mean"] == "reward" and named.renamed["kl_divergence"] == "kl"


def test_a_whole_reward_in_0_1_has_its_passing_score_as_a_named_one_does(tmp_path):
    """A loop or a framework that logs its reward whole (Tinker's env/all/reward/total) gets the passing score a named
    reward function gets: in [0, 1] at every step, 1. So a run that climbed to it in its first steps is learning (0.95
    -> 0.99 by quarter, against the widest spread a score in [0, 1] has at its mean), and one that sat there from its
    first step is near its ceiling, not flat and held back."""
    from hypotrack.triage.derived import add_derived
    from hypotrack.triage.keys import reward_functions
    from hypotrack.triage.progress import CEILING, run_progress
    from hypotrack.triage.roles import assign_roles

    def progress_of(rewards: list[float]):
        path = tmp_path / "metrics.jsonl"
        path.write_text("".join(json.dumps({"progress/batch": s, "env/all/reward/total": r, "optim/lr": 1e-4}) + "\n"
                                for s, r in enumerate(rewards)))
        log = canonical(read_source(str(path))).log
        add_derived(log, assign_roles(log, reward_functions(log), None))
        assert log.series["task_reward/pass_share"][0][1] == rewards[0]
        return run_progress(log)

    climbed = progress_of([0.68, 0.93, 0.97] + [0.99 + (s % 3) / 300 for s in range(37)])
    assert climbed.state == "learning", climbed.sentence()
    at_the_top = progress_of([0.97 + (s % 3) / 100 for s in range(40)])
    assert at_the_top.state == "flat" and at_the_top.verdict == CEILING, at_the_top.sentence()


def test_a_reward_every_completion_scores_alike_at_every_step_has_no_passing_score(tmp_path):
    """A reward of 32 for every completion at every step (a CSV of step, episode_reward, avg_reward) says nothing of
    what a pass pays, so the flat run is not near a ceiling of 32."""
    from hypotrack.triage.derived import add_derived
    from hypotrack.triage.keys import reward_functions
    from hypotrack.triage.progress import CEILING, run_progress
    from hypotrack.triage.roles import assign_roles

    path = tmp_path / "grpo_rewards.csv"
    path.write_text("step,episode_reward,avg_reward\n" + "".join(f"{s},32.0,32.0\n" for s in range(50)))
    log = canonical(read_source(str(path))).log
    add_derived(log, assign_roles(log, reward_functions(log), None))
    assert "task_reward/pass_share" not in log.series
    progress = run_progress(log)
    assert progress.state == "flat" and progress.verdict != CEILING, progress.sentence()


def test_tunix_names_with_their_mode_in_the_middle_are_read(tmp_path):
    """Tunix (Google's JAX library) logs rewards/train/mean, rewards/train/<function>, actor/train/kl and
    completions/train/mean_length; a user exports a curve a file. Its kl is k1 or k3 as its settings choose, so a kl
    below 0 is no broken KL; its rewards/eval/* are an evaluation's, and rewards/max no reward function."""
    from hypotrack.definitions import Project, load_library
    from hypotrack.triage.api import triage
    from hypotrack.triage.keys import canonical_name

    assert canonical_name("rewards/train/check_answer") == "rewards/check_answer/mean"
    assert canonical_name("completions/train/mean_length") == "completions/mean_length"
    assert canonical_name("rewards/eval/mean") is None and canonical_name("rewards/max") is None
    (tmp_path / "mean_reward_curve.csv").write_text(
        "step,rewards/train/mean\n" + "".join(f"{s},{1.2 - s / 50 + (s % 3) / 10}\n" for s in range(0, 80)))
    (tmp_path / "kl_curve.csv").write_text(
        "step,actor/train/kl\n" + "".join(f"{s},{-0.0008 if s == 1 else 0.002 * s}\n" for s in range(1, 81)))
    report = triage(str(tmp_path), load_library(Project.locate(Path(__file__).resolve().parents[1])).hypotheses)
    assert report.progress.state == "getting worse", report.progress.sentence()
    assert {"rewards/train/mean", "actor/train/kl"} <= set(report.renamed), report.renamed
    assert "h03" not in [e.id for e in report.suspects()], [(e.id, e.evidence) for e in report.ranking[:4]]


def test_a_dict_of_rewards_alone_is_a_completions_scores_not_a_step(tmp_path):
    """A loop that shows sample completions prints each one's scores as a dict: with no epoch (transformers' Trainer
    logs it with every step), no step and nothing of the update, it is no training step."""
    path = tmp_path / "train.log"
    samples = "".join(f"Generation: 42\nMetrics:  {{'format_reward': 1.0, 'answer_reward': {s % 2}.0, "
                      f"'reward': {s % 2}.0}}\n" for s in range(12))
    path.write_text(samples + "{'loss': 0.1, 'reward': 0.5, 'epoch': 0.5}\n{'loss': 0.1, 'reward': 0.6, 'epoch': 1.0}\n")
    log = read_source(str(path))
    assert [value for _, value in log.series["reward"]] == [0.5, 0.6]


def test_a_loops_lists_counts_and_abbreviations_are_read_as_their_values(tmp_path):
    """A loop prints the group it just scored ([0, 1], or ['0.80', '0.01'] as strings), a count out of a total
    (correct=3/4) and short names (avg_loss, acc): a list is its mean, its spread the step's reward_std, and a group
    whose rewards are all the same is a tied one; a count is its share."""
    path = tmp_path / "train.log"
    lines = [f"[step {s}/8] correct={s % 3}/4 rewards=['0.80', '{0.8 if s % 2 else 0.0:.2f}', '0.80', '0.80'] "
             f"avg_loss=-0.0{s} acc=0.{s}0 lr=1.00e-06 wasted=0" for s in range(1, 9)]
    lines.append("[step 0009] SKIP rewards=[1,1] rollout=131s elapsed=131s")  # a skipped step prints its group too
    path.write_text("\n".join(lines) + "\n")
    log = read_source(str(path))
    assert log.series["correct"][0] == (1, 0.25) and log.series["acc"][1] == (2, 0.2)
    assert log.series["rewards"][0] == (1, 0.8) and log.series["rewards"][1] == (2, pytest.approx(0.6))
    assert dict(log.series["frac_reward_zero_std"]) == {s: float(s % 2) for s in range(1, 10)}
    assert dict(log.series["reward_std"])[1] == 0.0 and dict(log.series["reward_std"])[2] > 0.3
    assert canonical_name("avg_loss") == "loss" and canonical_name("acc") == "rewards/accuracy/mean"


def test_a_hand_written_loops_negative_kl_is_read_by_its_sign_convention(tmp_path):
    """A loop's kl is its own estimator: the signed mean log-ratio (k1) goes below 0 at some steps by noise, and a loop
    that logs log ref - log policy reads below 0 on the whole (minus the KL). Its sign is the loop's convention: a kl
    below 0 on the whole is read with its sign turned, and neither is read as a broken KL (no kl/lowest). TRL's k3
    is never below 0, so its lowest step is read."""
    from hypotrack.triage.derived import _lowest_kl

    def read(path, kls, name="kl"):
        if path.suffix == ".log":
            path.write_text("".join(f"step {s} loss=0.1 reward=0.{s} {name}={kl}\n" for s, kl in enumerate(kls, 1)))
        else:
            path.write_text("".join(f"{{'loss': 0.1, 'reward': 0.{s}, 'kl': {kl}, 'epoch': {s / 10}}}\n"
                                    for s, kl in enumerate(kls, 1)))
        raw = read_source(str(path))
        log = canonical(raw).log
        _lowest_kl(log)
        return raw, log

    noisy, negative = [0.02, -0.03, 0.05, -0.01, 0.04, -0.02, 0.03, 0.01], [-0.53, -0.52, -0.55, -0.51, -0.53, -0.54]
    raw, log = read(tmp_path / "loop.log", noisy)
    assert [v for _, v in log.series["kl"]] == noisy and "kl/lowest" not in log.series
    assert any("read as logged" in said for said in raw.said)
    raw, log = read(tmp_path / "loop.log", negative)
    assert [v for _, v in log.series["kl"]] == [-v for v in negative] and "kl/lowest" not in log.series
    assert any("with its sign turned" in said for said in raw.said)
    raw, log = read(tmp_path / "wrapped.log", negative, name="mean_kl")  # the loop's own name for it
    assert [v for _, v in log.series["kl"]] == [-v for v in negative]
    _, log = read(tmp_path / "trl.txt", noisy)
    assert log.series["kl/lowest"][0][1] == -0.03


TABLES = {
    # printed by hand, after a logger's timestamp, among the loop's other prints (a line of two cells is no row)
    "by hand": ("12:00:01 | Step | Reward |     KL | Grad Norm |     LR\n12:00:01 | ------------------------------\n",
                "12:00:01 | {s:4d} | {reward:6.3f} | {kl:6.3f} | {grad:9.2f} | 1e-06\n"),
    # rich's box table
    "rich": ("┏━━━━━━┳━━━━━━━━┳━━━━━━━┳━━━━━━━━━━━┳━━━━━━━┓\n┃ Step ┃ Reward ┃    KL ┃ Grad Norm ┃    LR ┃\n"
             "┡━━━━━━╇━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━╇━━━━━━━┩\n",
             "│ {s:4d} │ {reward:6.3f} │ {kl:5.3f} │ {grad:9.2f} │ 1e-06 │\n"),
    # print(df): columns aligned by spaces, the frame's index before each row
    "a printed DataFrame": ("      step  reward     kl  grad_norm     lr\n",
                            "{s:<4d}  {s:4d}  {reward:6.3f}  {kl:5.3f}  {grad:9.2f}  1e-06\n"),
    # np.savetxt(..., header="step reward kl grad_norm lr"): every number in full, the step too
    "np.savetxt": ("# step reward kl grad_norm lr\n",
                   "{s:.18e} {reward:.18e} {kl:.18e} {grad:.18e} 1.000000000000000000e-06\n"),
}


@pytest.mark.parametrize("style", sorted(TABLES))
def test_a_table_a_loop_prints_reads_its_columns_as_keys(tmp_path, style):
    """A loop that prints its steps as a table: a header naming the step column, a row of numbers a step."""
    header, row = TABLES[style]
    rows = "".join(row.format(s=s, reward=s / 50, kl=0.05, grad=2.0 + s) for s in range(1, 11))
    path = tmp_path / "train.log"
    path.write_text("Gen 1: Reward= 0.255 | M: d4d3 a6c5\n" + header + rows + "done\n")
    log = read_source(str(path))
    assert log.kind == "console" and log.series["reward"][2] == (3, 0.06) and len(log.series["reward"]) == 10
    assert log.series["kl"][0] == (1, 0.05) and log.series["grad_norm"][-1] == (10, 12.0)
    assert log.series["lr"][0] == (1, 1e-06) and canonical_name("lr") == "learning_rate"


def test_an_aligned_tables_row_whose_step_is_no_whole_number_is_no_step(tmp_path):
    """np.savetxt writes a step as a float: one written as inf or nan is no step (and no traceback)."""
    path = tmp_path / "metrics.txt"
    path.write_text("# step reward kl\ninf 0.1 0.2\nnan 0.2 0.3\n" + "".join(f"{s}.0 0.{s} 0.01\n" for s in range(1, 6)))
    assert read_source(str(path)).series["reward"] == [(s, s / 10) for s in range(1, 6)]


def test_prose_that_names_a_step_among_its_words_heads_no_table(tmp_path):
    """A table aligned by spaces is read only in rows of numbers right under its header: a sentence of names is no
    header for the numbers printed after it elsewhere."""
    path = tmp_path / "train.log"
    path.write_text("step size of the schedule\nloading weights\n" + "1 2 3 4 5\n" * 10)
    with pytest.raises(HypotrackError, match="train.log: not a source triage reads"):
        read_source(str(path))


LAUNCHED = {  # what a launcher or a terminal puts on each line it relays
    "torchrun --tee": lambda line: f"[default0]:{line}",
    "srun --label": lambda line: f"0: {line}",
    "deepspeed over pdsh": lambda line: f"worker-0: {line}",
    "mpirun --tag-output": lambda line: f"[1,0]<stdout>:{line}",
    "docker compose logs": lambda line: f"trainer-1  | {line}",
    "kubectl logs --timestamps": lambda line: f"2025-03-01T12:00:{len(line) % 60:02d}.123456789Z {line}",
    "a coloured terminal": lambda line: f"\x1b[1;32m{line}\x1b[0m",
    "Ray": lambda line: f"(TaskRunner pid=41873) {line}",
    "Python's logging": lambda line: f"2025-03-01 12:00:{len(line) % 60:02d},123 - grpo - INFO - {line}",
    "loguru": lambda line: f"2025-03-01 12:00:00.123 | INFO     | train:log_step:88 - {line}",
    # tqdm redraws its bar after a carriage return and clears it the same way before a line is printed
    "a tqdm bar in a captured terminal": lambda line: f" 40%|\u2588\u2588\u2588\u2588      | 4/10 [00:08<00:12]\r    \r{line}",
}


@pytest.mark.parametrize("launcher", sorted(LAUNCHED))
def test_a_console_log_relayed_by_a_launcher_reads_as_the_script_printed_it(tmp_path, launcher):
    """The table and the step blocks a loop prints are read by where their lines start: a launcher's prefix on every
    line, or a terminal's colour codes, are taken off first, and the report says so."""
    header, row = TABLES["by hand"]
    rows = "".join(row.format(s=s, reward=s / 50, kl=0.05, grad=2.0 + s) for s in range(1, 11))
    printed = "Loaded 200 training samples\n" + header + rows + "done\n"
    (tmp_path / "plain.log").write_text(printed)
    relayed = tmp_path / "relayed.log"
    relayed.write_text("\n".join(LAUNCHED[launcher](line) for line in printed.splitlines()) + "\n")
    plain, log = read_source(str(tmp_path / "plain.log")), read_source(str(relayed))
    assert log.series == plain.series and len(log.series["reward"]) == 10
    said = next(said for said in log.said if said.startswith("read without "))
    assert not said.startswith("read without the a "), said  # each part of it names itself


def test_a_captured_terminals_progress_bars_leave_the_lines_they_share_whole(tmp_path):
    """`script` or a notebook's cell capture keeps tqdm's every redraw on the line a loop printed: before it (cleared by
    `\\r`), joined to it (a line printed right after a redraw) or after it. A loop's step blocks are read by where
    their lines start, so the bars are taken off first and said; a bar with a postfix is a loop's own log and stays."""
    bar = " {p}%|\u2588\u2588   | {s}/10 [00:{s:02d}<00:09, 1.02s/it]"
    lines = ["Loading checkpoint shards: 100%|\u2588\u2588| 2/2 [00:02<00:00,  1.30s/it]\r"]
    for s in range(1, 10):
        block = [f"Step {s}", f"  Reward: {0.05 * s:.2f}", "  KL: 0.0010", f"  Loss: {0.5 - s / 50:.3f}"]
        before, after = bar.format(p=10 * s - 5, s=s), bar.format(p=10 * s, s=s)
        block[0] = [f"\r{before}\r      \r{block[0]}", f"\r{before}{block[0]}", f"{block[0]}\r{after}"][s % 3]
        lines += block
    path = tmp_path / "captured.log"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    log = read_source(str(path))
    assert log.series["reward"] == [(s, round(0.05 * s, 2)) for s in range(1, 10)], log.series
    assert any("progress bars redrawn after carriage returns" in said for said in log.said), log.said
    postfix = tmp_path / "postfix.log"
    postfix.write_text("".join(f"\r{s}0%|\u2588  | {s}/9 [00:0{s}<00:09, 1.0it/s, loss={0.5 - s / 50}, "
                               f"reward={s / 10}]" for s in range(1, 10)) + "\n")
    assert [value for _, value in read_source(str(postfix)).series["reward"]] == [s / 10 for s in range(1, 10)]


def test_a_loop_that_starts_each_line_with_its_step_keeps_it():
    """A bare number before a colon is a launcher's prefix only where most lines carry the same one."""
    from hypotrack.triage.console_prefixes import plain_text

    printed = "".join(f"{s}: loss={0.5 - s / 100:.3f} reward={s / 20:.3f}\n" for s in range(1, 21))
    assert plain_text(printed) == (printed, "")


def test_a_console_log_that_starts_like_json_is_still_a_console_log(tmp_path):
    """A script's own prints come first ('[gating] ...', '{config}'), then the Trainer's dicts."""
    path = tmp_path / "training.log"
    dicts = "".join(f"{{'loss': {0.01 * s}, 'grad_norm': 0.5, 'learning_rate': 1e-06, 'reward': {0.1 * s}, "
                    f"'rewards/accuracy/mean': {0.1 * s}, 'epoch': {s / 100}}}\n" for s in range(1, 9))
    path.write_text("[gating] model loaded on 1 GPU\n" + dicts + "{'train_runtime': 120.5, 'train_loss': 0.04}\n")
    log = read_source(str(path))
    assert log.kind == "console" and [s for s, _ in log.series["reward"]] == list(range(1, 9))
    assert "train_runtime" not in log.series  # the end-of-training summary is no step


@pytest.mark.parametrize("printer", ["pprint", "rich", "json indent"])
def test_a_dict_printed_over_several_lines_is_read_as_one(tmp_path, printer):
    """pprint and rich print a dict too long for a line one item a line, as json.dumps(indent=2) does: each is read
    as the one-line dict print() writes, at the step its items hold or in order."""
    import pprint

    def printed(metrics: dict) -> str:
        if printer == "pprint":
            return pprint.pformat(metrics)
        if printer == "rich":  # rich.pretty: an item a line, indented by four, a comma after the last
            return "{\n" + "".join(f"    {key!r}: {value!r},\n" for key, value in metrics.items()) + "}"
        return json.dumps(metrics, indent=2)
    steps = [{"step": s, "loss": 0.01, "grad_norm": 0.3, "learning_rate": 1e-06, "reward": s / 10, "kl": 0.001 * s,
              "rewards/accuracy_reward/mean": s / 20, "completions/mean_length": 120.0} for s in range(1, 9)]
    path = tmp_path / "train.log"
    path.write_text("config loaded\n" + "".join(f"Step {row['step']} metrics:\n{printed(row)}\n" for row in steps))
    log = read_source(str(path))
    assert log.kind == "console" and log.series["reward"] == [(s, s / 10) for s in range(1, 9)], log.series
    assert log.series["rewards/accuracy_reward/mean"][-1] == (8, 0.4)


@pytest.mark.parametrize("width", [80, 181])
def test_a_dict_a_terminal_capture_cut_at_its_width_is_read_whole(tmp_path, width):
    """A cluster job's output or a copied screen cuts every line at the terminal's width, mid-name and mid-number,
    and drops the space a cut falls on: each of transformers' dicts is read with every key and value it printed."""
    steps = [{"loss": 0.0123, "grad_norm": 0.16944053769111633, "learning_rate": 6.666666666666667e-06,
              "completions/mean_length": 384.0, "completions/clipped_ratio": 1.0,
              "rewards/_reward_action/mean": -2.25 + s / 10, "rewards/reward_format/std": 0.2121320515871048,
              "reward": -2.9749999046325684 + s / 10, "reward_std": 0.9192387461662292, "frac_reward_zero_std": 0.5,
              "entropy": 0.35387856513261795, "clip_ratio/low_min": 0.0, "clip_ratio/region_mean": 0.0,
              "epoch": s / 100} for s in range(1, 13)]
    captured = []
    for row in steps:
        line = str(row)
        captured += [line[at:at + width].rstrip(" ") for at in range(0, len(line), width)]
    path = tmp_path / "output1.txt"
    path.write_text("Singularity> python -m train --train_steps 12\n" + "\n".join(captured) + "\n")
    log = read_source(str(path))
    assert sorted(log.series) == sorted(steps[0]), sorted(log.series)
    assert log.series["reward"] == [(s, pytest.approx(-2.9749999046325684 + s / 10)) for s in range(1, 13)]
    assert log.series["clip_ratio/low_min"] == [(s, 0.0) for s in range(1, 13)]


def test_a_loops_full_width_separators_read_as_their_ascii_forms(tmp_path):
    """A loop that prints in Chinese writes its colons and commas full-width ('reward：0.41，kl：0.001')."""
    path = tmp_path / "train.log"
    path.write_text("开始训练\n" + "".join(f"step {s} | loss：0.01 | reward：{s / 10}，kl：0.001\n" for s in range(1, 9)))
    assert read_source(str(path)).series["reward"] == [(s, s / 10) for s in range(1, 9)]


def test_a_loops_metrics_printed_as_json_after_a_prefix_of_its_own(tmp_path):
    """print(f"METRICS {json.dumps(metrics)}") or a logger's line around it: the same dict in JSON's spelling (double
    quotes, true, false, NaN), read where the line has it, at the step it holds."""
    path = tmp_path / "train.log"
    lines = [f"12:00:{s:02d} | train.py:88 | METRICS " + json.dumps({"step": 10 * s, "loss": 0.01, "reward": s / 10,
                                                                        "kl": float("nan") if s == 3 else 0.001 * s,
                                                                        "eval": False})
             for s in range(1, 9)]
    path.write_text("starting run\n" + "\n".join(lines) + "\n")
    log = read_source(str(path))
    assert log.kind == "console" and log.series["reward"] == [(10 * s, s / 10) for s in range(1, 9)]
    assert log.nonfinite["kl"] == [(30, pytest.approx(float("nan"), nan_ok=True))]


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_a_console_log_in_another_encoding_is_read_as_the_same_log(tmp_path, encoding):
    """PowerShell's `python train.py > train.log` writes UTF-16 with a byte-order mark and CRLF line ends; a log
    with one Latin-1 byte (a German locale's message) is no UTF-8. Both are read for the dicts they hold."""
    dicts = "".join(f"{{'loss': 0.01, 'grad_norm': 0.5, 'learning_rate': 1e-06, 'reward': {0.05 * s:.2f}, "
                    f"'kl': 0.001, 'epoch': {s / 100}}}\r\n" for s in range(1, 9))
    path = tmp_path / "train.log"
    path.write_bytes(("Trainingsl\u00e4ufe: 1\r\n" + dicts).encode(encoding))
    log = read_source(str(path))
    assert log.kind == "console" and log.series["reward"][2] == (3, 0.15) and len(log.series["reward"]) == 8


# --------------------------------------------------------------------------- what triage cannot read, said in one sentence


@pytest.mark.parametrize("name, content, says", [
    ("training_args.bin", b"\x80\x04K\x01.", "a checkpoint's training settings"),
    ("model.safetensors", b"\x10\x00\x00\x00\x00\x00\x00\x00{}", "a checkpoint's weights"),
    ("curve.png", b"\x89PNG\r\n\x1a\n\x00\x00", "an image"),
    ("notes.txt", b"the run looked fine to me\n", "a text file with none of the metrics"),
    ("run-0a1b2c3d.wandb", b":W&B\xe1\xbe\x00" + b"\x00" * 64, "a W&B run file with no logged metrics"),
    ("run-cut.wandb", b"\x00\x01binary", "not a W&B run file"),
    ("run-q94rd60i.swanlab", b":SWL\xd6\xe1\x02o\xcfq\xacH\x00\x01", "a SwanLab run file"),
    ("metrics.csv", b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 84950\n", "a Git LFS pointer"),
    ("wandb-summary.json", b'{"train/reward": 0.5, "_step": 100}', "W&B's summary of the run"),
    # a loop's f.write(f"{step},{total},{loss},{reward}\n") with no header: nothing names a column
    ("train_metrics.csv", b"1,50,-1.239144,0.250000,287.75\n2,50,-3.203884,0.250000,295.0\n", "no header line"),
])
def test_a_file_triage_cannot_read_gets_one_sentence(tmp_path, run_cli, name, content, says):
    path = tmp_path / name
    path.write_bytes(content)
    result = run_cli("triage", path)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert says in result.stderr and name in result.stderr, result.stderr
    assert "pass" in result.stderr  # what to pass instead


def test_a_swanlab_log_folder_is_named_for_what_it_holds(tmp_path, run_cli):
    """SwanLab's swanlog/ folder keeps each run in its own binary record: triage says so, and what to pass instead."""
    run = tmp_path / "swanlog" / "run-20261127_202133-q94rd60i"
    run.mkdir(parents=True)
    (run / "run-q94rd60i.swanlab").write_bytes(b":SWL\xd6\xe1\x02o\xcfq\xacH\x00\x01")
    result = run_cli("triage", tmp_path / "swanlog")
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "SwanLab run files, such as run-20261127_202133-q94rd60i/run-q94rd60i.swanlab" in result.stderr
    assert "pass the run's trainer_state.json" in result.stderr
