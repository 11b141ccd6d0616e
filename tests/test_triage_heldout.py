"""The held-out score: which evaluation key triage reads as the task on unseen prompts, and how it decides the
run's reading beside the training reward (hypotrack/triage/heldout.py, progress.py)."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

from hypotrack.triage.heldout import HeldOut, heldout_score
from hypotrack.triage.progress import run_progress
from hypotrack.triage.runlog import RunLog


def series(values: list[float], every: int = 1) -> list[tuple[int, float]]:
    return [(i * every, v) for i, v in enumerate(values)]


def logged(series: dict) -> RunLog:
    return RunLog(source="metrics.jsonl", kind="jsonl", series=series)


RISING = [0.1, 0.12, 0.11, 0.2, 0.25, 0.3, 0.33, 0.4, 0.45, 0.5, 0.52, 0.55]
LEVEL = [0.31, 0.29, 0.3, 0.32, 0.3, 0.28, 0.31, 0.3, 0.29, 0.31, 0.3, 0.3]


def test_the_task_reward_functions_own_evaluation_mean_is_read_first() -> None:
    log = logged({"eval_reward": series(LEVEL), "eval_rewards/correct_answer/mean": series(RISING),
                         "eval_rewards/correct_answer/std": series([0.4] * 12), "eval_accuracy": series(LEVEL)})
    held = heldout_score(log, "correct_answer")
    assert held is not None and held.metric == "eval_rewards/correct_answer/mean" and held.spread == 0.4


def test_a_name_that_says_correctness_comes_before_the_evaluations_reward() -> None:
    log = logged({"eval/reward": series(LEVEL), "eval/answer_accuracy": series(RISING),
                         "eval/format_accuracy": series(RISING)})
    held = heldout_score(log, None)
    assert held is not None and held.metric == "eval/answer_accuracy" and held.pass_value == 1.0
    assert heldout_score(logged({"test/env/all/reward/total": series(LEVEL),
                                        "test/env/all/pass_rate": series(LEVEL)}), None).metric == "test/env/all/pass_rate"


def test_what_an_evaluation_measures_besides_the_task_is_never_its_score() -> None:
    others = ["eval_loss", "eval_runtime", "eval/completions/mean_length", "eval_kl", "eval_entropy", "eval/reward_std",
              "eval/format_accuracy", "eval/num_tokens", "eval_samples_per_second", "eval/n_problems",
              "eval_frac_reward_zero_std", "eval_rewards/correct_answer/std", "reward", "accuracy"]
    assert heldout_score(logged({key: series(RISING) for key in others}), None) is None


def test_a_held_out_score_with_a_trend_decides_and_names_the_training_reward() -> None:
    log = logged({"reward": series(LEVEL), "reward_std": series([0.3] * 12)})
    held = heldout_score(logged({"eval/pass_at_1": series(RISING, every=10)}), None)
    progress = run_progress(log, heldout=held)
    assert (progress.state, progress.heldout, progress.metric) == ("learning", True, "eval/pass_at_1")
    assert progress.also == "on its training reward reward it is flat (0.3 -> 0.3033 over 12 logged steps)"
    assert "learning on held-out eval/pass_at_1" in progress.sentence() and progress.as_json()["heldout"] is True


def test_a_clear_but_small_held_out_change_counts_where_the_training_reward_moves_the_same_way() -> None:
    """Twelve evaluations rising by about 0.008 each, against a spread of 1.0 between completions (a change counts
    from 0.1 on its own): clear, yet below that. With the training reward clearly climbing it is a run that learns;
    with a level training reward, or one that falls, it stays flat."""
    small_rise = [-0.5 + 0.008 * i + (0.004 if i % 2 else -0.004) for i in range(12)]
    held = HeldOut("eval/score", series(small_rise, every=10), spread=1.0)
    for training, state in ((RISING, "learning"), (LEVEL, "flat"), (RISING[::-1], "flat")):
        progress = run_progress(logged({"reward": series(training), "reward_std": series([0.3] * 12)}), heldout=held)
        assert (progress.state, progress.heldout) == (state, True), progress.sentence()
    assert "below that on its own, but clear" in run_progress(
        logged({"reward": series(RISING), "reward_std": series([0.3] * 12)}), heldout=held).sentence()


def test_an_accuracys_change_counts_against_the_widest_spread_its_mean_allows() -> None:
    """No spread is logged beside a held-out accuracy: a score between 0 and 1 whose completions pass or fail spreads
    by sqrt(m (1 - m)) at a mean m, and no score in that range spreads wider, so a tenth of that is the smallest change
    that counts. Six points of an accuracy near 0.9 count (a tenth of its level, 0.09, did not let them); three
    points near 0.19 do not (0.039)."""
    near_the_top = [0.885, 0.89, 0.88, 0.9, 0.91, 0.905, 0.92, 0.93, 0.935, 0.94, 0.95, 0.955]
    low = [0.17 + 0.003 * i + (0.002 if i % 2 else -0.002) for i in range(12)]
    training = logged({"reward": series(LEVEL), "reward_std": series([0.3] * 12)})
    for values, state in ((near_the_top, "learning"), (low, "flat")):
        held = heldout_score(logged({"eval/accuracy": series(values, every=10)}), None)
        progress = run_progress(training, heldout=held)
        mean = sum(values) / len(values)
        assert (progress.state, progress.heldout) == (state, True), progress.sentence()
        assert abs(progress.smallest_change - 0.1 * (mean * (1 - mean)) ** 0.5) < 1e-9


def test_a_reward_that_swings_between_batches_is_read_by_its_halves_as_well_as_its_quarters() -> None:
    """A small fixed prompt set cycled in order gives batches of easier and harder prompts: quarters 0.39, 0.49,
    0.39, 0.49 put the last quarter clearly above the first, yet the halves stand level, so the run is flat; a
    reward that climbs moves its halves too."""
    swinging = [0.39 + (0.01 if i % 2 else -0.01) for i in range(12)] + [0.49 + (0.01 if i % 2 else -0.01)
                                                                         for i in range(12)]
    swinging = swinging + swinging
    for values, state in ((swinging, "flat"), (RISING * 4, "flat"), (sorted(RISING * 4), "learning")):
        progress = run_progress(logged({"reward": series(values), "reward_std": series([0.3] * len(values))}))
        assert progress.state == state, (values, progress.sentence())


def test_a_change_is_clear_exactly_where_the_95_percent_interval_the_report_prints_leaves_0_out() -> None:
    """The verdict and the interval in its sentence never disagree. A reward that steps down half-way by a shift
    running from well inside its noise to well beyond it (its halves then move as its quarters do): the run is read
    as getting worse exactly where the printed 95% interval leaves 0 out and the change is large enough to count
    (a t of 1.97 included), and flat everywhere else."""
    import random

    from hypotrack.triage.progress import trend

    rng = random.Random(7)
    readings = []
    for shift in [i / 400 for i in range(0, 120)]:
        values = [0.5 + rng.gauss(0, 0.05) for _ in range(20)] + [0.5 - shift + rng.gauss(0, 0.05) for _ in range(20)]
        progress = trend("reward", list(enumerate(values)), 0.3, 0.0)
        clear = progress.change_high < 0 and progress.change <= -progress.smallest_change
        assert (progress.state == "getting worse") == clear, progress.sentence()
        readings.append(progress)
    assert any(1.96 <= -p.t < 2.0 and p.state == "getting worse" for p in readings)
    assert any(p.state == "flat" for p in readings) and any(p.state == "getting worse" for p in readings)


def test_fewer_evaluations_than_a_trend_needs_leave_the_training_reading() -> None:
    log = logged({"reward": series(RISING), "reward_std": series([0.3] * 12)})
    held = heldout_score(logged({"eval/pass_at_1": series(LEVEL[:5], every=10)}), None)
    progress = run_progress(log, heldout=held)
    assert (progress.state, progress.heldout, progress.also) == ("learning", False, "")


def test_an_export_of_the_evaluation_curve_alone_is_read_without_a_ranking(tmp_path: Path) -> None:
    """A W&B long-form export that holds eval/reward only: the run's reading, and one finding on why no ranking."""
    export = tmp_path / "eval_only.csv"
    with export.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["run_name", "metric", "step", "value"])
        for step, value in series(RISING, every=4):
            writer.writerow(["sweep_a", "eval/reward", step, value])
    done = subprocess.run([sys.executable, "-m", "hypotrack.cli", "triage", str(export), "--json"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={"HYPOTRACK_DB": str(tmp_path / "registry.db"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["steps"] == 0 and report["ranking"] == []
    assert report["progress"]["state"] == "learning" and report["progress"]["heldout"] is True
    assert any(f.startswith("no training metric logged, only the evaluation passes' eval/reward") for f in report["findings"])


def test_the_evaluation_dicts_a_trainer_prints_give_the_held_out_score(tmp_path: Path) -> None:
    """transformers prints an evaluation pass as its own dict after the step it ran at; it is read at that step."""
    lines = []
    for step in range(1, 13):
        bar = f"{100 * step // 12:3d}%|###       | {step}/12 [00:{step:02d}<00:10,  1.00s/it]"
        lines.append(bar + str({"loss": 0.0, "grad_norm": 0.5, "learning_rate": 1e-06, "reward": LEVEL[step - 1],
                                "reward_std": 0.3, "epoch": step / 12}))
        if step % 2 == 0:
            lines.append(str({"eval_loss": 0.01, "eval_reward": RISING[step - 1], "eval_runtime": 1.2,
                              "epoch": step / 12}))
    lines.append(str({"train_runtime": 30.0, "train_loss": 0.0, "epoch": 1.0}))
    log_file = tmp_path / "train.log"
    log_file.write_text("\n".join(lines) + "\n")
    from hypotrack.triage.sources import read_source

    log = read_source(str(log_file))
    assert log.series["eval_reward"] == [(step, RISING[step - 1]) for step in range(2, 13, 2)]
    assert "train_loss" not in log.series and len(log.series["reward"]) == 12
    progress = run_progress(log, heldout=heldout_score(log, None))
    assert (progress.heldout, progress.metric, progress.steps) == (True, "eval_reward", 6)


def test_an_advantage_std_reads_most_groups_untied_only_where_the_advantages_are_group_normalised() -> None:
    """A batch std of group-normalised advantages of 0.9 leaves at most 19% of groups tied; a std above 1 is of
    advantages not scaled by their group's std, and one of 0.5 allows three groups in four tied: neither says so."""
    def still(spread: float) -> str:
        log = logged({"reward": series(LEVEL), "advantages/std": series([spread] * 12),
                      "kl": series([0.002] * 12)})
        return run_progress(log).verdict

    assert still(0.9) == "updates too small to move the policy"
    assert still(1.6) == "" and still(0.5) == ""
