"""h24's cause: a verifier's timeouts scored as real failures."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypotrack.faults.base import PlantedFault


class VerifierTimeoutsScoredZero(PlantedFault):
    name = "verifier_timeouts_scored_zero"
    imitates = "h24"
    description = ("the task verifier runs under a time budget and returns 0.0 when it times out, as a real score "
                   "(rllm PR #710, trl PR #6427): 4 in 10 completions, right or wrong, are scored as failures")
    seams = ("reward_functions",)

    @dataclass(frozen=True)
    class Settings:
        timeout_share: float = 0.4
        """The share of verifications that run out of time."""

    def reward_functions(self, functions: list[Callable[..., Any]], task_index: int) -> list[Callable[..., Any]]:
        functions = list(functions)
        functions[task_index] = self.scored_zero_on_timeout(functions[task_index])
        return functions

    def scored_zero_on_timeout(self, original: Callable[..., list[float]]) -> Callable[..., list[float]]:
        """The task reward behind a verifier with a time budget: a verification that runs out of time is caught
        and scored 0.0, as if the answer were wrong. Its run time depends on the machine's load, so the same
        completion can pass at one call and time out at the next."""
        clock = random.Random(0x7153)  # the load on the verification service: no seed of the run controls it
        share = self.config.timeout_share

        def verify(score: float) -> float:
            if clock.random() < share:
                raise TimeoutError("verification exceeded its time budget")
            return score

        def scored_zero_on_timeout(*args: Any, **kwargs: Any) -> list[float]:
            scores = []
            for score in original(*args, **kwargs):
                try:
                    scores.append(verify(score))
                except TimeoutError:
                    scores.append(0.0)  # the bug: a failure to score is trained as a real score of 0
            return scores

        functools.update_wrapper(scored_zero_on_timeout, original)  # the user's signature stays readable (session/inference.py)
        scored_zero_on_timeout.__name__ = getattr(original, "__name__", "task_reward")
        return scored_zero_on_timeout
