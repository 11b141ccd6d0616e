"""A ninth user's reward functions: the balance checked against the ledger's own column, and a short-answer bonus."""

import re


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def balance_matches(completions, balance, **kwargs) -> list[float]:
    """1 when the first number of the completion is the entry's balance."""
    scores = []
    for completion, expected in zip(completions, balance):
        found = re.match(r"\s*(-?\d+)", _text(completion))
        scores.append(1.0 if found and found.group(1) == expected else 0.0)
    return scores


def terse(completions, **kwargs) -> list[float]:
    """A small bonus for answers of at most four characters."""
    return [0.5 if len(_text(c).strip()) <= 4 else 0.0 for c in completions]
