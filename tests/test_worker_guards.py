"""An arm's guards on what cannot train: a task reward that never scores stops the arm, named."""

from __future__ import annotations

import math

import pytest

from hypotrack.errors import HypotrackError
from hypotrack.session.guards import SIGNAL_STEPS, check_task_signal
from hypotrack.session.reward_functions import RewardContractError, RewardErrorLog, counted


def _called(func, log: RewardErrorLog, batches: int = 2) -> None:
    wrapped = counted(func, log)
    for _ in range(batches):
        wrapped(completions=["1", "2", "3", "4"])


@pytest.mark.parametrize("value", [None, math.nan, float("inf")])
def test_a_task_reward_without_a_finite_score_stops_the_arm(value) -> None:
    def judge(completions, **kwargs):
        return [value for _ in completions]

    log = RewardErrorLog()
    _called(judge, log)
    check_task_signal(log, "judge", SIGNAL_STEPS - 1)  # one batch may hold nothing to score
    with pytest.raises(HypotrackError, match="task reward judge gave no score .* only None or NaN"):
        check_task_signal(log, "judge", SIGNAL_STEPS)


@pytest.mark.parametrize("returned, words", [
    (lambda n: ["n/a"] * n, r"reward function 'judge' returned str 'n/a' for completion 0: rewards must be numbers"),
    (lambda n: [1.0] * (n - 1), r"reward function 'judge' returned 3 values for 4 completions"),
    (lambda n: "1.0", r"reward function 'judge' returned str '1.0': it must return a list"),
    (lambda n: 0.5, r"reward function 'judge' returned float 0.5: it must return a list"),
])
def test_a_reward_returning_what_trl_cannot_use_names_the_function(returned, words) -> None:
    def judge(completions, **kwargs):
        return returned(len(completions))

    with pytest.raises(RewardContractError, match=words):
        _called(judge, RewardErrorLog())


def test_numbers_of_any_kind_and_none_are_rewards() -> None:
    import numpy as np

    def judge(completions, **kwargs):
        return [1, 0.5, np.float32(0.25), None]

    log = RewardErrorLog()
    _called(judge, log, batches=1)
    assert log.scored["judge"] == 3


def test_one_score_is_signal_and_an_auxiliary_reward_is_not_checked() -> None:
    def task(completions, **kwargs):
        return [None, None, 0.0, None]

    def style(completions, **kwargs):
        return [None for _ in completions]

    log = RewardErrorLog()
    _called(task, log)
    _called(style, log)
    check_task_signal(log, "task", 10)
    assert (log.scored["task"], log.scored["style"]) == (2, 0)


def test_a_task_reward_that_always_raises_says_what_it_raised() -> None:
    def parse(completions, **kwargs):
        raise ValueError("no answer tag")

    log = RewardErrorLog()
    _called(parse, log)
    with pytest.raises(HypotrackError, match=r"raised \(ValueError: no answer tag"):
        check_task_signal(log, "parse", SIGNAL_STEPS)
