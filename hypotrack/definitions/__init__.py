"""The definitions users write: hypotheses and experiments as pydantic models, and the YAML loader that reads
them with file:line errors (no torch, mlflow or trl imports here).
Names are resolved lazily so that `hypotrack.definitions.summary` (the cached path of
the read-only commands) can be imported without pydantic or PyYAML.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Library": "loader", "Problem": "loader", "Project": "project", "SpecError": "loader", "load_library": "loader",
    "STATUSES": "vocabulary", "Criterion": "models", "Experiment": "models", "Hypothesis": "models",
    "Overrides": "models",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'hypotrack.definitions' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
