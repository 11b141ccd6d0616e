"""Reward functions wrapped so a raising function is counted and reported, not silently replaced.

TRL treats a ``None`` reward as "no value" (NaN, excluded from the group baseline,
zero advantage). A wrapped function that raises returns ``None`` for the batch and
the error is counted per step; the count is logged as ``reward_errors/<name>`` and
the first message of each kind is kept for the run's report.
"""

from __future__ import annotations

import functools
import math
import traceback
from collections import Counter
from typing import Any, Callable


class RewardErrorLog:
    def __init__(self) -> None:
        self.step_counts: Counter[str] = Counter()
        self.total: Counter[str] = Counter()
        self.first_message: dict[str, str] = {}
        self.calls: Counter[str] = Counter()
        self.scored: Counter[str] = Counter()  # finite scores returned: None and NaN are no score

    def take_step_counts(self) -> dict[str, int]:
        counts = dict(self.step_counts)
        self.step_counts.clear()
        return counts


def wrap_reward(func: Callable[..., Any], log: RewardErrorLog) -> Callable[..., Any]:
    name = getattr(func, "__name__", type(func).__name__)

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> list[float | None]:
        log.calls[name] += 1
        completions = kwargs.get("completions", args[0] if args else [])
        try:
            values = func(*args, **kwargs)
            log.scored[name] += sum(1 for v in values or [] if _finite(v))
            return values
        except Exception as exc:  # noqa: BLE001 - user code; counted and reported
            log.step_counts[name] += 1
            log.total[name] += 1
            if name not in log.first_message:
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                log.first_message[name] = f"{type(exc).__name__}: {exc} ({frame.filename}:{frame.lineno})"
            return [None] * len(completions)

    guarded.__name__ = name
    return guarded


def _finite(value: Any) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
