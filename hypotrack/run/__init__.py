"""The runner side of a `hypotrack run`: plan the arms, start the workers, record everything, decide.

- api.py         what a notebook (or the CLI) calls: `prepare_test`, then `run_prepared`; `with_more_seeds`
                 and `run_until_decided` for seeds that add up
- pooling.py     a test decides over its own seeds and those of earlier tests of the same arms
- plan.py        arms x seeds from an experiment, a hypothesis and the run settings
- preflight.py   a missing model, dataset or import path fails before anything is recorded;
                 data_check.py: the columns and sizes the experiment names, read from the data
- lifecycle.py   one test from start to verdict, with interrupts handled
- workers.py     worker scheduling and the handler of each worker event
- launchers.py   how a worker starts (python, accelerate; ray_launch.py: Ray tasks, local or a cluster)
- records.py     what goes to MLflow besides the metrics; plots.py the reward curves
- signals.py     Ctrl-C and SIGTERM as a flag the loop checks
- selftest.py    planted faults x hypotheses, sharing arms between cells
- close_runs.py  ends the MLflow runs of a runner that died;  mlflow_ui.py  `hypotrack ui`

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
