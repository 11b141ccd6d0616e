"""Public API of the toy lab. Must not import torch at import time (the CLI imports this module)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

TASKS = ("arith", "musique-mini", "letters")
MODEL_PREFIX = "toy:"  # a model named "toy:<name>" is one of the toy lab's warm-started models
# The toy models by name, each with the task it was warm-started on: a task's name is its base model;
# arith-wide is the arith model at the width vLLM's CPU attention can serve (toy/model.py); letters-wide is letters
# at that width (letters is the lab's task of long, uncertain completions, which only vLLM's runs need).
MODELS = {"arith": "arith", "musique-mini": "musique-mini", "arith-wide": "arith", "letters-wide": "letters"}
SERVED_BY_VLLM = ("arith-wide", "letters-wide")  # the toy models vLLM's CPU attention can serve (head size 32)

_REWARDS = {
    "arith": ["hypotrack.toy.rewards:arith_correct"],
    "musique-mini": ["hypotrack.toy.rewards:musique_correct"],
    "letters": ["hypotrack.toy.rewards:letters_share"],
}


def _check(task: str) -> None:
    if task not in TASKS:
        raise ValueError(f"unknown toy task {task!r}; expected one of {TASKS}")


def _check_model(name: str) -> None:
    if name not in MODELS:
        raise ValueError(f"unknown toy model {name!r}; expected one of {tuple(MODELS)}")


def is_built(name: str, cache_dir: str | Path | None = None) -> bool:
    """Whether the warm-started toy model `name` is already in the cache (ensure_model returns at once)."""
    _check_model(name)
    from .warmstart import model_dir

    return (model_dir(name, 0, cache_dir) / "config.json").exists()


def toy_model(model: str | None) -> str | None:
    """The toy model a model name asks for ("toy:<name>"; plain "toy" means arith), None for any other model."""
    if model is None or str(model) == "toy":
        return "arith"
    if not str(model).startswith(MODEL_PREFIX):
        return None
    name = str(model)[len(MODEL_PREFIX):]
    if name not in MODELS:
        from hypotrack.errors import HypotrackError

        raise HypotrackError(f"model {model!r}: unknown toy model (known: {', '.join(MODEL_PREFIX + m for m in MODELS)})")
    return name


def toy_task(model: str | None) -> str | None:
    """The toy-lab task a model name's toy model was warm-started on, None for any model not the toy lab's."""
    name = toy_model(model)
    return None if name is None else MODELS[name]


def resolve_model(model: str | None, on_build: Callable[[str], None] | None = None) -> str:
    """A path `from_pretrained` can load: a toy model is built into the cache on first use (``on_build``
    hears what is being built first); any other model is returned as given."""
    name = toy_model(model)
    if name is None:
        return str(model)
    if on_build is not None and not is_built(name):
        on_build(f"building the {name} toy model, first run only")
    return str(ensure_model(name))


def ensure_model(name: str, cache_dir: str | Path | None = None) -> Path:
    """Directory of the warm-started toy model `name` (a task's name is its base model) with its tokenizer,
    building it if missing."""
    _check_model(name)
    from .warmstart import build

    return build(name, seed=0, cache_dir=cache_dir)


def load_dataset(task: str, n: int, seed: int):
    _check(task)
    if task == "arith":
        from .arith import build_dataset
    elif task == "letters":
        from .letters import build_dataset
    else:
        from .musique_mini import build_dataset
    return build_dataset(n, seed)


def reward_functions(task: str) -> list[str]:
    """Default reward import paths ("module:function") for `task`."""
    _check(task)
    return list(_REWARDS[task])
