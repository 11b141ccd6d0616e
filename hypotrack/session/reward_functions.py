"""Reward functions as an arm trains with them: counted, and changed by planted faults and treatments.

TRL treats a ``None`` reward as "no value" (NaN, excluded from the group baseline, zero advantage). A counted
function that raises returns ``None`` for the batch and the error is counted per step; the count is logged as
``reward_errors/<name>`` and the first message of each function is kept for the run's report. A function that
returns something TRL cannot use (not one number or None per completion) stops the arm, naming the function.

The session (session/arm_session.py) puts the layers on in one order for every arm: the planted faults (they
are in the user's function), then the treatments (they act on it), then the counting (it sees what the trainer
gets). An async function stays async, so TRL still awaits it on its event loop.
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

    def called(self, name: str) -> None:
        self.calls[name] += 1

    def raised(self, name: str, exc: Exception) -> None:
        self.step_counts[name] += 1
        self.total[name] += 1
        if name not in self.first_message:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            self.first_message[name] = f"{type(exc).__name__}: {exc} ({frame.filename}:{frame.lineno})"

    def returned(self, name: str, values: Any, expected: int) -> None:
        check_reward_values(name, values, expected)  # a wrong shape or type is a bug: the arm stops
        self.scored[name] += sum(1 for v in values if finite(v))


def name_of(func: Any) -> str:
    return getattr(func, "__name__", type(func).__name__)


def is_async(func: Any) -> bool:
    """Whether calling ``func`` returns a coroutine (TRL's own test, which TRL uses to await it)."""
    from trl.trainer.utils import is_async_callable

    return is_async_callable(func)


def counted(func: Callable[..., Any], log: RewardErrorLog) -> Callable[..., Any]:
    """``func`` with its calls, errors and scores counted in ``log``."""
    name = name_of(func)

    def size(args: tuple[Any, ...], kwargs: dict[str, Any]) -> int:
        return len(kwargs.get("completions", args[0] if args else []))

    if is_async(func):
        async def counted_async(*args: Any, **kwargs: Any) -> list[float | None]:
            log.called(name)
            try:
                values = await func(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - user code; counted and reported
                log.raised(name, exc)
                return [None] * size(args, kwargs)
            log.returned(name, values, size(args, kwargs))
            return values

        return _named(counted_async, func, name)

    def counted_sync(*args: Any, **kwargs: Any) -> list[float | None]:
        log.called(name)
        try:
            values = func(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - user code; counted and reported
            log.raised(name, exc)
            return [None] * size(args, kwargs)
        log.returned(name, values, size(args, kwargs))
        return values

    return _named(counted_sync, func, name)


def _named(wrapper: Callable[..., Any], func: Any, name: str) -> Callable[..., Any]:
    functools.update_wrapper(wrapper, func)  # what the function carries (a docstring, attributes) stays readable
    wrapper.__name__ = name  # TRL logs each function under its name: rewards/<name>/mean
    return wrapper


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


def subset_rows(kwargs: dict[str, Any], rows: list[int], count: int) -> dict[str, Any]:
    """The keyword arguments of a reward call restricted to ``rows``: every per-completion list (prompts,
    completions, completion_ids, dataset columns) is cut to those rows, anything else passes unchanged."""
    return {key: [value[i] for i in rows] if isinstance(value, list) and len(value) == count else value
            for key, value in kwargs.items()}


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def finite(value: Any) -> bool:
    try:
        return value is not None and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
