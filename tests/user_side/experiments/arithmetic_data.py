"""A user's loader: sums written as questions, the gold answer under their own column name."""

import random

from datasets import Dataset


def load_sums(n: int, seed: int) -> Dataset:
    rng = random.Random(f"sums-{seed}")
    rows = []
    for _ in range(n):
        a, b = rng.randint(0, 49), rng.randint(0, 49)
        rows.append({"question": f"{a}+{b}=", "target": str(a + b), "difficulty": "easy" if a + b < 50 else "hard"})
    return Dataset.from_list(rows)


def load_products(n: int, seed: int):
    """Products of three-digit numbers: far beyond what a model trained on sums of two digits can write."""
    rng = random.Random(f"products-{seed}")
    rows = []
    for _ in range(n):
        a, b = rng.randint(100, 999), rng.randint(100, 999)
        rows.append({"question": f"{a}*{b}=", "target": str(a * b)})
    return Dataset.from_list(rows)
