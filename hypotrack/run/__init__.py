"""The runner side of a `hypotrack run`: plan the arms, launch the workers, record everything, decide.

Three rooms, and the test's life that walks through them:
- planning/    what a test will train, checked before anything is recorded
- launching/   each arm's worker started, watched and stopped; its events turned into arm state
- recording/   what a test leaves in MLflow, and what it reads back from the registry
- arms.py      an arm x seed as the three rooms share it (ArmState)
- lifecycle.py one test from start to verdict, with interrupts handled; the only caller that ends its runs
- api.py       what a notebook (or the CLI) calls: `prepare_test`, then `run_prepared`; `with_more_seeds`
               and `run_until_decided` for seeds that add up
- selftest.py  planted faults x hypotheses, sharing arms between cells, recorded the way lifecycle records a test

The runner is the only MLflow client of a test (hypotrack.tracking); workers never are.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"prepare_test": "api", "run_prepared": "api", "PreparedTest": "api", "with_more_seeds": "api",
            "run_until_decided": "api", "RunOptions": "lifecycle", "RunOutcome": "lifecycle"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'hypotrack.run' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
