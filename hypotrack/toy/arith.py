"""Verifiable arithmetic: prompt "12+7=", answer "19".

Operands are small so the tiny model becomes partially competent within seconds of warm start; the
reward is exact correctness of the first integer in the completion.
"""
from __future__ import annotations

import random
import re

from .text import completion_text

MAX_OPERAND = 49  # 50*50 = 2500 distinct problems: enough to need generalisation, small enough to learn fast
_INT = re.compile(r"^\s*(-?\d+)")


def make_example(rng: random.Random) -> dict:
    a, b = rng.randint(0, MAX_OPERAND), rng.randint(0, MAX_OPERAND)
    return {"prompt": f"{a}+{b}=", "answer": str(a + b), "a": a, "b": b}


def build_dataset(n: int, seed: int):
    """Deterministic for (n, seed): rows come from a private RNG, never the global one."""
    from datasets import Dataset

    rng = random.Random(f"arith-{seed}")
    return Dataset.from_list([make_example(rng) for _ in range(n)])


def parse_answer(completion: str) -> str | None:
    m = _INT.match(completion)
    return m.group(1) if m else None


def arith_correct(completions, answer, **kwargs) -> list[float]:
    """1.0 when the completion's leading integer equals the answer, else 0.0."""
    return [1.0 if parse_answer(completion_text(c)) == str(a) else 0.0 for c, a in zip(completions, answer)]


def arith_format(completions, **kwargs) -> list[float]:
    """Cheap shaping: 1.0 when the completion is only an integer (no trailing junk)."""
    return [1.0 if re.fullmatch(r"\s*-?\d+\s*", completion_text(c)) else 0.0 for c in completions]
