"""Public API of the toy lab. Must not import torch at import time (the CLI imports this module)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

TASKS = ("arith", "musique-mini")
MODEL_PREFIX = "toy:"  # a model named "toy:<task>" is the toy lab's warm-started model for that task

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


def toy_task(model: str | None) -> str | None:
    """The toy-lab task a model name asks for ("toy:<task>"; plain "toy" means arith), None for any other model."""
    if model is None or str(model) == "toy":
        return "arith"
    if not str(model).startswith(MODEL_PREFIX):
        return None
    task = str(model)[len(MODEL_PREFIX):]
    if task not in TASKS:
        from hypotrack.errors import HypotrackError

        raise HypotrackError(f"model {model!r}: unknown toy task (known: {', '.join(MODEL_PREFIX + t for t in TASKS)})")
    return task


def resolve_model(model: str | None, on_build: Callable[[str], None] | None = None) -> str:
    """A path `from_pretrained` can load: a toy model is built into the cache on first use (``on_build``
    hears what is being built first); any other model is returned as given."""
    task = toy_task(model)
    if task is None:
        return str(model)
    if on_build is not None and not is_built(task):
        on_build(f"building the {task} toy model, first run only")
    return str(ensure_model(task))


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
