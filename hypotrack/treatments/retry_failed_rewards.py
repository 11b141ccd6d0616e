"""h24's fix: a completion that got a failure's default score is scored again."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypotrack.treatments.base import Treatment


class RetryFailedRewards(Treatment):
    name = "retry_failed_rewards"
    fixes = "h24"
    help = ("Treatment arm: score again each completion that got its reward function's lowest value, and keep the "
            "new score where it differs (a verifier that timed out or crashed and returned a default).")
    seams = ("reward_functions",)

    @dataclass(frozen=True)
    class Settings:
        retries: int = 2
        """Times a completion at the default score is scored again."""
        sample: int = 16
        """Completions scored once more per probe, to learn the default."""
        probes: int = 8
        """Calls that probe for the default until a change is seen."""

    def reward_functions(self, functions: list[Callable[..., Any]]) -> list[Callable[..., Any]]:
        """Each reward function (a reward model, a torch module, scores deterministically and is left alone)."""
        return [func if _is_module(func) else self.retried(func) for func in functions]

    def retried(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """``func`` with each completion that got a failure's default score scored again (up to ``retries`` times),
        keeping the first score that differs: a verifier that timed out or crashed gives the real score on a retry,
        while a deterministic function gives the same score again.

        The default is learned, not assumed to be the lowest score (a failure under a +-1 verdict returns 0): until
        a change is seen, each of the first ``probes`` calls scores a sample of ``sample`` completions once more,
        and the value every change has on one side is the default. Until then, and for a function whose scores
        never changed, the batch's lowest score is retried."""
        from hypotrack.hooks.reward_failures import shared_value
        from hypotrack.session.reward_functions import finite, name_of, subset_rows

        retries, sample, probes = self.config.retries, self.config.sample, self.config.probes
        learned: float | None = None
        probed = 0

        def learn(kwargs: dict[str, Any], values: list[Any]) -> float | None:
            rows = [i for i, v in enumerate(values) if finite(v)][:: max(1, len(values) // sample)][:sample]
            again = func(**subset_rows(kwargs, rows, len(values)))
            changed = [(float(values[row]), float(value)) for row, value in zip(rows, again)
                       if finite(value) and float(value) != float(values[row])]
            return shared_value(changed)[0] if changed else None

        def retried(*args: Any, **kwargs: Any) -> list[Any]:
            nonlocal learned, probed
            values = list(func(*args, **kwargs))
            scores = [float(v) for v in values if finite(v)]
            if args or not scores:
                return values
            if learned is None and probed < probes:
                probed += 1
                learned = learn(kwargs, values)
            default = min(scores) if learned is None else learned
            rows = [i for i, v in enumerate(values) if finite(v) and float(v) == default]
            for _ in range(retries):
                if not rows:
                    break
                again = func(**subset_rows(kwargs, rows, len(values)))
                still = []
                for row, value in zip(rows, again):
                    if finite(value) and float(value) != default:
                        values[row] = value
                    else:
                        still.append(row)
                rows = still
            return values

        functools.update_wrapper(retried, func)  # the user's signature stays readable (session/inference.py)
        retried.__name__ = name_of(func)
        return retried


def _is_module(func: Any) -> bool:
    import torch

    return isinstance(func, torch.nn.Module)
