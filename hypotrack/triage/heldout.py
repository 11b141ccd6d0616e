"""The held-out score: which evaluation key of a run's logs measures its task, read beside the training reward.

A training reward is measured on the prompts the policy trains on, and it can mislead both ways: a run can
climb on unseen prompts while its training reward stays level (the batches it draws get harder, or the gain is
in answers the reward scores coarsely), and an export may hold the evaluation curve alone. Trainers log their
evaluation passes under a split in front of the key (TRL's `eval_reward`, `eval_rewards/<func>/mean`; W&B and
TensorBoard's `eval/reward`; a loop's `eval/pass_at_1`, `val/accuracy`, `test/env/all/pass_rate`).

The key read is, in this order: the evaluation mean of the run's task reward function (roles.py chose it);
else a key whose name says it scores correctness (keys.CORRECTNESS_WORDS: accuracy, correct, pass, exact
match, success, ...); else the evaluation's reward. A key whose name says it measures something else (a loss,
a length, a format, a KL, a spread, a count, a time) is never read as the score.
"""

from __future__ import annotations

from dataclasses import dataclass

from .keys import CORRECTNESS_WORDS, EVAL_PREFIXES, SHAPING_WORDS, evaluation_body, name_says
from .runlog import RunLog

# Words that say an evaluation key measures something other than how well the task is done (keys.name_says: a stem
# of three letters or fewer is a whole word, a longer one starts a word).
NOT_A_SCORE = ("loss", "runtime", "second", "length", "len", "token", "kl", "entropy", "clip", "std", "temperature",
               "top", "step", "frac", "num", "n", "count", "turn", "episode", "rubric", "sample", "lr", "time", "max",
               "min", "epoch", "optimizer")
REWARD_WORDS = ("reward", "return")
# verl's validation metrics other than its data sources' main score (val-core/): read only where no main score is.
AUXILIARY_SPLIT = "val-aux/"


@dataclass
class HeldOut:
    """The evaluation key read as the held-out score, its points, and what its logs say of its scale."""

    metric: str
    points: list[tuple[int, float]]
    spread: float = 0.0  # the logged std of the score between completions (median), where the logs give one
    pass_value: float = 0.0  # 1 for a score in [0, 1] named as a share that passes (an accuracy), else 0


def heldout_score(log: RunLog, task: str | None) -> HeldOut | None:
    """The held-out score of a run as read (before keys.canonical sets evaluation keys aside), or None."""
    candidates = [key for key in log.series if _is_score(key)]
    if not candidates:
        return None

    def preference(key: str) -> tuple[int, bool, int, str]:
        body = evaluation_body(key)
        if task is not None and body in (f"rewards/{task}/mean", f"rewards/{task}"):
            order = 0
        elif name_says(body, CORRECTNESS_WORDS) and not name_says(body, REWARD_WORDS):
            order = 1
        else:
            order = 2
        return order, key.startswith(AUXILIARY_SPLIT), len(key), key

    metric = min(candidates, key=preference)
    points = log.series[metric]
    values = [value for _, value in points]
    stds = [v for _, v in log.series.get(_std_key(metric), [])]
    spread = sorted(stds)[len(stds) // 2] if stds else 0.0
    share = preference(metric)[0] == 1 and all(0.0 <= v <= 1.0 for v in values)
    return HeldOut(metric, points, spread, 1.0 if share else 0.0)


def _is_score(key: str) -> bool:
    if not key.lower().startswith(EVAL_PREFIXES):
        return False
    body = evaluation_body(key)
    if body.endswith("/std") or name_says(body, NOT_A_SCORE) or name_says(body, SHAPING_WORDS):
        return False
    return name_says(body, CORRECTNESS_WORDS) or name_says(body, REWARD_WORDS)


def _std_key(metric: str) -> str:
    """Where the score's spread between completions is logged: rewards/f/mean beside rewards/f/std, reward beside
    reward_std."""
    if metric.endswith("/mean"):
        return metric.removesuffix("/mean") + "/std"
    return metric + "_std"
