"""Toy lab: tiny local model + synthetic verifiable tasks for fast CPU GRPO runs (no torch at import)."""
from .lab import TASKS, ensure_model, load_dataset, reward_functions

__all__ = ["TASKS", "ensure_model", "load_dataset", "reward_functions"]
