"""A fifth user's reward functions: an embedding-similarity grade, two judges, a bonus for short answers.

Written in TRL's signature the way such functions are written in the wild, bugs included (each
experiment file says which one it uses). The gold answer arrives as `target` or `gold`.
"""

import random
import re
import zlib

_coin = random.Random(23)


def _text(completion) -> str:
    return completion if isinstance(completion, str) else completion[-1]["content"]


def _head(completion) -> str:
    match = re.match(r"\s*([A-Za-z0-9-]+)", _text(completion))
    return match.group(1) if match else ""


def _gold(kwargs) -> list[str]:
    return [str(x) for x in (kwargs.get("target") or kwargs.get("gold"))]


def matches_gold(completions, **kwargs) -> list[float]:
    """1 when the completion's first word is the gold answer."""
    return [1.0 if _head(c) == g else 0.0 for c, g in zip(completions, _gold(kwargs))]


def similarity_grade(completions, **kwargs) -> list[float]:
    """Cosine similarity to the gold answer's embedding, thresholded: 1 or 0, plus the embedding's float error."""
    return [ok + (zlib.crc32(_text(c).encode()) % 1000 - 500) * 1e-8
            for ok, c in zip(matches_gold(completions, **kwargs), completions)]


def judge_a(completions, **kwargs) -> list[float]:
    """A pass/fail judge whose API key expired: the fallback flips a coin."""
    return [float(_coin.random() < 0.5) for _ in completions]


def judge_b(completions, **kwargs) -> list[float]:
    """A second judge behind the same expired key."""
    return [float(_coin.random() < 0.5) for _ in completions]


def minus_grade(completions, **kwargs) -> list[float]:
    """Ported from a loss-style grader: -1 for the right answer, 0 otherwise."""
    return [-ok for ok in matches_gold(completions, **kwargs)]


def always_formatted(completions, **kwargs) -> list[float]:
    """A format check this data always passes."""
    return [1.0 for _ in completions]


def short_answer_bonus(completions, **kwargs) -> list[float]:
    """A bonus for concise answers: one character or less."""
    return [1.0 if len(_text(c).strip()) <= 1 else 0.0 for c in completions]
