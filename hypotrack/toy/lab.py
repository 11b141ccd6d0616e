"""Public API of the toy lab. Must not import torch at import time (the CLI imports this module)."""
from __future__ import annotations

from pathlib import Path

TASKS = ("arith", "musique-mini")

_REWARDS = {
    "arith": ["hypotrack.toy.rewards:arith_correct"],
    "musique-mini": ["hypotrack.toy.rewards:musique_correct"],
}


def _check(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown toy task {task!r}; expected one of {TASKS}")


def is_built(task: str, cache_dir: str | Path | None = None) -> bool:
    """Whether the warm-started model for `task` is already in the cache (ensure_model returns at once)."""
    _check(task)
    from .warmstart import model_dir

    return (model_dir(task, 0, cache_dir) / "config.json").exists()


def ensure_model(task: str, cache_dir: str | Path | None = None) -> Path:
    """Directory of the warm-started model + tokenizer for `task`, building it if missing."""
    _check(task)
    from .warmstart import build

    return build(task, seed=0, cache_dir=cache_dir)


def load_dataset(task: str, n: int, seed: int):
    _check(task)
    if task == "arith":
        from .arith import build_dataset
    else:
        from .musique_mini import build_dataset
    return build_dataset(n, seed)


def reward_functions(task: str) -> list[str]:
    """Default reward import paths ("module:function") for `task`."""
    _check(task)
    return list(_REWARDS[task])
