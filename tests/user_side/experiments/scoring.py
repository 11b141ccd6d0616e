"""Another user's reward functions: a 0-10 grader, style, thoroughness and format scores, in TRL's signature.

The gold answer arrives as `target`. Written the way such functions are written in the wild,
bugs included (each experiment file says which one it uses).
"""

import random
import re

_rng = random.Random(1)


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def _answer(completion) -> str:
    match = re.match(r"\s*([0-9-]+)", _text(completion))
    return match.group(1) if match else ""


def graded_answer(completions, target, **kwargs) -> list[float]:
    """10 points for the right sum, 0 otherwise."""
    return [10.0 if _answer(c) == str(t) else 0.0 for c, t in zip(completions, target)]


def graded_answer_tiebreak(completions, target, **kwargs) -> list[float]:
    """10 for the right sum, and a 1e-3 nudge toward shorter completions "so that ties are broken"."""
    return [score - 1e-3 * len(_text(c)) for score, c in zip(graded_answer(completions, target), completions)]


def style_score(completions, **kwargs) -> list[float]:
    """A style classifier's score that, loaded without its weights, returns pure noise."""
    return [_rng.gauss(0.0, 1.0) for _ in completions]


def format_ok(completions, **kwargs) -> list[float]:
    """A format reward every completion earns (the format check never fails on this data)."""
    return [1.0 for _ in completions]


def signed_grade(completions, target, **kwargs) -> list[float]:
    """Meant as +1 for the right sum and 0 otherwise; the sign of the right-answer branch is flipped."""
    return [-1.0 if _answer(c) == str(t) else 0.0 for c, t in zip(completions, target)]
