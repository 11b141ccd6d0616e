"""A fourth user's reward functions: a 0-2 grade, a judge with a bias, a length judge, a numeric check.

Written in TRL's signature the way such functions are written in the wild, bugs included (each
experiment file says which one it uses). The gold answer arrives as `target` or `gold`.
"""

import random
import re

_jitter = random.Random(11)


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def _leading(completion) -> str:
    match = re.match(r"\s*([A-Za-z0-9-]+)", _text(completion))
    return match.group(1) if match else ""


def _gold(kwargs) -> list[str]:
    return [str(x) for x in (kwargs.get("target") or kwargs.get("gold"))]


def is_correct(completions, **kwargs) -> list[float]:
    """1 when the leading word is the gold answer."""
    return [1.0 if _leading(c) == g else 0.0 for c, g in zip(completions, _gold(kwargs))]


def two_point_grade(completions, **kwargs) -> list[float]:
    """0 or 2 points, from a grading service that returns its scores through float32 arithmetic with jitter."""
    return [2.0 * ok + _jitter.uniform(-1e-3, 1e-3) for ok in is_correct(completions, **kwargs)]


def is_numeric(completions, **kwargs) -> list[float]:
    """1 when the completion starts with a number (a format check)."""
    return [1.0 if _leading(c).lstrip("-").isdigit() else 0.0 for c in completions]


def length_judge(completions, **kwargs) -> list[float]:
    """A 'detail' judge whose scores swing wildly from call to call (temperature 1.5 on the judge model)."""
    return [_jitter.gauss(0.0, 2.0) for _ in completions]


def score(completions, **kwargs) -> list[float]:
    """Meant as 'distance from a wrong answer'; comes out as -2 for the right answer and 0 otherwise."""
    return [-2.0 * ok for ok in is_correct(completions, **kwargs)]


def parity_judge(completions, **kwargs) -> list[float]:
    """A judge that, as it turned out, pays answers with an even last digit."""
    return [1.0 if _leading(c)[-1:] in ("0", "2", "4", "6", "8") else 0.0 for c in completions]
