"""h13's cause: a task reward whose parser never matches what the model writes."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from hypotrack.faults.base import PlantedFault


class RewardNeverMatches(PlantedFault):
    name = "reward_never_matches"
    imitates = "h13"
    description = ("the task reward's parser expects a format the model never writes, so every completion, right or "
                   "wrong, scores 0 (unsloth#1761, open-r1#235)")
    seams = ("reward_functions",)

    def reward_functions(self, functions: list[Callable[..., Any]], task_index: int) -> list[Callable[..., Any]]:
        functions = list(functions)
        functions[task_index] = never_matches(functions[task_index])
        return functions


def never_matches(original: Callable[..., list[float]]) -> Callable[..., list[float]]:
    """The task reward with a parser that never matches: 0 for every completion."""

    def scored_zero(*args: Any, **kwargs: Any) -> list[float]:
        original(*args, **kwargs)  # the real function still runs (and can still raise); its verdict is lost
        return [0.0] * len(kwargs.get("completions", args[0] if args else []))

    functools.update_wrapper(scored_zero, original)  # the user's signature stays readable (session/inference.py)
    scored_zero.__name__ = getattr(original, "__name__", "task_reward")
    return scored_zero
