"""A sixth user's reward functions: a +-1 score with a noisy head, a tone judge, a leading-digit judge.

Written in TRL's signature the way such functions are written in the wild, bugs included (each
experiment file says which one it uses). The gold answer arrives as `target` or `gold`.
"""

import random
import re

_head_noise = random.Random(31)


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def _word(completion) -> str:
    match = re.match(r"\s*([A-Za-z0-9-]+)", _text(completion))
    return match.group(1) if match else ""


def _gold(kwargs) -> list[str]:
    return [str(x) for x in (kwargs.get("target") or kwargs.get("gold"))]


def solved(completions, **kwargs) -> list[float]:
    """1 for the right answer first, 0 otherwise."""
    return [1.0 if _word(c) == g else 0.0 for c, g in zip(completions, _gold(kwargs))]


def signed_score(completions, **kwargs) -> list[float]:
    """+1 / -1 from a value head whose bf16 output carries ~1e-4 noise."""
    return [2.0 * ok - 1.0 + _head_noise.gauss(0.0, 1e-4) for ok in solved(completions, **kwargs)]


def tone_judge(completions, **kwargs) -> list[float]:
    """A tone judge in [0, 2] whose rubric never reached it: its scores are uniform noise."""
    return [2.0 * _head_noise.random() for _ in completions]


def minus_ten(completions, **kwargs) -> list[float]:
    """A penalty-style grader with its sign lost: -10 for the right answer, 0 otherwise."""
    return [-10.0 * ok for ok in solved(completions, **kwargs)]


def leading_one_judge(completions, **kwargs) -> list[float]:
    """A 'confidence' judge that, it turned out, pays answers that start with the digit 1."""
    return [1.0 if _word(c).startswith("1") else 0.0 for c in completions]


def numeric_format(completions, **kwargs) -> list[float]:
    """1 when the completion starts with a number."""
    return [1.0 if _word(c).isdigit() else 0.0 for c in completions]


def formatted(completions, **kwargs) -> list[float]:
    """A format check the data always passes."""
    return [1.0 for _ in completions]
