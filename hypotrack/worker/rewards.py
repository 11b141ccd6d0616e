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
from collections.abc import Callable
from typing import Any

from hypotrack.errors import HypotrackError


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
        except Exception as exc:  # noqa: BLE001 - user code; counted and reported
            log.step_counts[name] += 1
            log.total[name] += 1
            if name not in log.first_message:
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                log.first_message[name] = f"{type(exc).__name__}: {exc} ({frame.filename}:{frame.lineno})"
            return [None] * len(completions)
        check_reward_values(name, values, len(completions))  # a wrong shape or type is a bug: the arm stops
        log.scored[name] += sum(1 for v in values if _finite(v))
        return values

    guarded.__name__ = name
    return guarded


def retry_failed(func: Callable[..., Any], retries: int = 2, sample: int = 16, probes: int = 8) -> Callable[..., Any]:
    """``func`` with each completion that got a failure's default score scored again (up to ``retries`` times),
    keeping the first score that differs: a verifier that timed out or crashed gives the real score on a retry,
    while a deterministic function gives the same score again (h24's treatment).

    The default is learned, not assumed to be the lowest score (a failure under a +-1 verdict returns 0): until
    a change is seen, each of the first ``probes`` calls scores a sample of ``sample`` completions once more, and
    the value every change has on one side is the default. Until then, and for a function whose scores never
    changed, the batch's lowest score is retried."""
    from hypotrack.hooks.reward_failures import shared_value

    name = getattr(func, "__name__", type(func).__name__)
    learned: float | None = None
    probed = 0

    def learn(kwargs: dict[str, Any], values: list[Any]) -> float | None:
        rows = [i for i, v in enumerate(values) if _finite(v)][:: max(1, len(values) // sample)][:sample]
        again = func(**subset_rows(kwargs, rows, len(values)))
        changed = [(float(values[row]), float(value)) for row, value in zip(rows, again)
                   if _finite(value) and float(value) != float(values[row])]
        return shared_value(changed)[0] if changed else None

    @functools.wraps(func)
    def retried(*args: Any, **kwargs: Any) -> list[Any]:
        nonlocal learned, probed
        values = list(func(*args, **kwargs))
        finite = [float(v) for v in values if _finite(v)]
        if args or not finite:
            return values
        if learned is None and probed < probes:
            probed += 1
            learned = learn(kwargs, values)
        default = min(finite) if learned is None else learned
        rows = [i for i, v in enumerate(values) if _finite(v) and float(v) == default]
        for _ in range(retries):
            if not rows:
                break
            again = func(**subset_rows(kwargs, rows, len(values)))
            still = []
            for row, value in zip(rows, again):
                if _finite(value) and float(value) != default:
                    values[row] = value
                else:
                    still.append(row)
            rows = still
        return values

    retried.__name__ = name
    return retried


def subset_rows(kwargs: dict[str, Any], rows: list[int], count: int) -> dict[str, Any]:
    """The keyword arguments of a reward call restricted to ``rows``: every per-completion list (prompts,
    completions, completion_ids, dataset columns) is cut to those rows, anything else passes unchanged."""
    return {key: [value[i] for i in rows] if isinstance(value, list) and len(value) == count else value
            for key, value in kwargs.items()}


class RewardContractError(HypotrackError):
    """A reward function returned something TRL cannot use (not one number or None per completion)."""


def check_reward_values(name: str, values: Any, expected: int) -> None:
    """TRL needs one number (or None) per completion; say which function broke that, and how."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise RewardContractError(f"reward function {name!r} returned {type(values).__name__} {_short(values)}: "
                                  f"it must return a list with one number (or None) per completion ({expected})")
    if len(values) != expected:
        raise RewardContractError(f"reward function {name!r} returned {len(values)} values for {expected} "
                                  "completions: it must return one number (or None) per completion")
    for index, value in enumerate(values):
        if value is not None and (isinstance(value, (str, bytes)) or not hasattr(type(value), "__float__")):
            raise RewardContractError(f"reward function {name!r} returned {type(value).__name__} {_short(value)} "
                                      f"for completion {index}: rewards must be numbers (or None for no score)")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _finite(value: Any) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
