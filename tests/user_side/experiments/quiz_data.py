"""An eighth user's loaders: arithmetic quizzes whose answers sit in `gold` or `solution`, with a `level` column.

None of these experiments declares its reference column: each reward function takes the answer column as an
argument of its own, and hypotrack reads it from there.
"""

import random

from datasets import Dataset


def _quiz(tag: str, n: int, seed: int, low: int, high: int, op: str, column: str) -> Dataset:
    rng = random.Random(f"quiz-{tag}-{seed}")
    rows = []
    for _ in range(n):
        a, b = rng.randint(low, high), rng.randint(low, high)
        value = a + b if op == "+" else a * b
        rows.append({"problem": f"{a}{op}{b}=", column: str(value), "level": "easy" if value < 50 else "hard"})
    return Dataset.from_list(rows)


def load_quiz_sums(n: int, seed: int) -> Dataset:
    """Two-digit sums, the answer under `gold`."""
    return _quiz("sums", n, seed, 0, 49, "+", "gold")


def load_quiz_products(n: int, seed: int) -> Dataset:
    """Three-digit products, the answer under `solution`: beyond a model that has only learned to add."""
    return _quiz("products", n, seed, 100, 999, "*", "solution")
