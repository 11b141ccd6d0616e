"""An eighth user's reward functions, each taking its answer column by name (TRL passes every column).

Written the way such functions are written in the wild, bugs included (each experiment file says which one).
"""

import re

BOXED = re.compile(r"\\boxed\{([^}]*)\}")


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def _leading_number(completion) -> str:
    match = re.match(r"\s*(-?\d+)", _text(completion))
    return match.group(1) if match else ""


def gold_distance(completions, gold, level=None, **kwargs) -> list[float]:
    """Meant as "minus the distance to the gold answer", written as the distance itself: a right answer scores
    0 and the further off a completion is, the higher it scores."""
    scores = []
    for completion, answer in zip(completions, gold):
        guess = _leading_number(completion)
        scores.append(min(abs(int(guess) - int(answer)), 100) / 100 if guess else 1.0)
    return scores


def boxed_gold(prompts, completions, gold, **kwargs) -> list[float]:
    """1 when the \\boxed{...} answer equals the gold one; the model answers without \\boxed, so nothing ever
    matches."""
    return [1.0 if (m := BOXED.search(_text(c))) and m.group(1).strip() == str(g) else 0.0
            for c, g in zip(completions, gold)]


def solution_match(completions, solution, **kwargs) -> list[float]:
    """1 for the exact product."""
    return [1.0 if _leading_number(c) == str(s) else 0.0 for c, s in zip(completions, solution)]
