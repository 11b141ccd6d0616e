"""A user's reward functions (TRL's signature). The gold answer arrives as `target` or `gold`."""

import random
import re

_rng = random.Random(0)


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def _expected(kwargs) -> list[str]:
    return [str(x) for x in (kwargs.get("target") or kwargs.get("gold"))]


def exact_match(completions, **kwargs) -> list[float]:
    """1 when the first word of the completion is the gold answer."""
    out = []
    for completion, gold in zip(completions, _expected(kwargs)):
        first = re.match(r"\s*([A-Za-z0-9-]+)", _text(completion))
        out.append(1.0 if first and first.group(1) == gold else 0.0)
    return out


def brevity(completions, **kwargs) -> list[float]:
    """A small bonus for answers of at most three characters."""
    return [1.0 if len(_text(c).strip()) <= 3 else 0.0 for c in completions]


def rm_score(completions, **kwargs) -> list[float]:
    """The task reward as a reward model served in bf16 gives it: the right score plus rounding jitter."""
    return [score + _rng.uniform(-2e-3, 2e-3) for score in exact_match(completions, **kwargs)]


def judge_score(completions, **kwargs) -> list[float]:
    """An LLM judge's 0/1 verdict that, misconfigured, answers at random."""
    return [float(_rng.random() < 0.5) for _ in completions]


def wrong_answer_penalty(completions, **kwargs) -> list[float]:
    """Meant as a penalty for wrong answers; returns +1 for them (the sign was never flipped)."""
    return [1.0 - score for score in exact_match(completions, **kwargs)]
