"""A user's loaders: arithmetic written as questions, the gold answer under their own column name."""

import random

from datasets import Dataset


def load_sums(n: int, seed: int) -> Dataset:
    rng = random.Random(f"sums-{seed}")
    rows = []
    for _ in range(n):
        a, b = rng.randint(0, 49), rng.randint(0, 49)
        rows.append({"question": f"{a}+{b}=", "target": str(a + b), "difficulty": "easy" if a + b < 50 else "hard"})
    return Dataset.from_list(rows)


def _questions(tag: str, n: int, seed: int, row) -> Dataset:
    rng = random.Random(f"{tag}-{seed}")
    return Dataset.from_list([row(rng) for _ in range(n)])


def _products(rng: random.Random) -> dict:
    a, b = rng.randint(100, 999), rng.randint(100, 999)
    return {"question": f"{a}*{b}=", "target": str(a * b)}


def _big_sums(rng: random.Random) -> dict:
    a, b = rng.randint(100000, 999999), rng.randint(100000, 999999)
    return {"question": f"{a}+{b}=", "target": str(a + b)}


def _chained(rng: random.Random) -> dict:
    a, b, c = rng.randint(100, 999), rng.randint(100, 999), rng.randint(100, 999)
    return {"question": f"{a}*{b}+{c}=", "target": str(a * b + c)}


def _divisions(rng: random.Random) -> dict:
    b, q = rng.randint(11, 99), rng.randint(10000, 99999)
    return {"question": f"{b * q}/{b}=", "target": str(q)}


def _hex_sums(rng: random.Random) -> dict:
    a, b = rng.randint(4096, 65535), rng.randint(4096, 65535)
    return {"question": f"{a:#x}+{b:#x}=", "target": f"{a + b:#x}"}


def load_products(n: int, seed: int) -> Dataset:
    """Products of three-digit numbers: far beyond what a model trained on sums of two digits can write."""
    return _questions("products", n, seed, _products)


def load_big_sums(n: int, seed: int) -> Dataset:
    """Sums of six-digit numbers, asked of a model that has only seen two-digit sums."""
    return _questions("big-sums", n, seed, _big_sums)


def load_chained(n: int, seed: int) -> Dataset:
    """Three-digit products plus a three-digit number: nothing a two-digit adder can answer."""
    return _questions("chained", n, seed, _chained)


def load_divisions(n: int, seed: int) -> Dataset:
    """Long divisions with five-digit results, for a model that adds two digits."""
    return _questions("divisions", n, seed, _divisions)


def load_hex_sums(n: int, seed: int) -> Dataset:
    """Sums written and answered in hexadecimal, for a model that adds in decimal."""
    return _questions("hex-sums", n, seed, _hex_sums)
