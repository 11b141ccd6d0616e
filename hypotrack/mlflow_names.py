"""The names hypotrack writes into MLflow, without importing mlflow.

The runner tags its runs with these before any training starts, and the CLI checks a run's flags
long before it needs MLflow; keeping the names apart lets `run --dry-run` and every bad-input error
answer without the two seconds mlflow's import costs.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path


class Tags:
    """The tag names hypotrack puts on MLflow runs (filter with them: tags.`hypotrack.arm` = 'control')."""

    HYPOTHESIS = "hypotrack.hypothesis"
    TEST = "hypotrack.test"
    KIND = "hypotrack.kind"  # test (the parent run), arm, selftest
    ARM = "hypotrack.arm"
    SEED = "hypotrack.seed"
    PLANT = "hypotrack.plant"
    VERDICT = "hypotrack.verdict"  # the status in words: validated, invalidated, inconclusive, not applicable
    HEADLINE = "hypotrack.headline"  # the verdict in one line: status, the deciding reading, the effect
    CONFIDENCE = "hypotrack.confidence"
    EFFECT = "hypotrack.effect"  # the treatment effect in words, with its interval
    ERROR = "hypotrack.error"
    WARNINGS = "hypotrack.warnings"
    REWARD_ERRORS = "hypotrack.reward_errors"
    SAMPLES_ERROR = "hypotrack.samples_error"
    TRAINABLE_PARAMETERS = "hypotrack.trainable_parameters"
    DATASET_ROWS = "hypotrack.dataset_rows"
    INFERRED = "hypotrack.inferred"  # the declarations filled in from the run itself, one sentence each
    STORE_DIR = "hypotrack.store_dir"  # on an experiment: the folder its artifact paths were written for
    NOTE = "mlflow.note.content"  # MLflow's run description
    PARENT = "mlflow.parentRunId"
    SOURCE_NAME = "mlflow.source.name"  # the UI's Source column: the command line that made the run
    EXPERIMENT_KIND = "mlflow.experimentKind"
    SHARED_VIEW = "mlflow.sharedViewState."  # + a key: an experiment page view the UI opens with ?viewStateShareKey=


def source_name() -> str:
    """The command line for the UI's Source column, which shows only what follows a name's last `/`: paths in
    the arguments are cut to their last part (`--output-dir outputs`), so the command itself stays in view."""
    return shlex.join(Path(word).name if "/" in word.rstrip("/") else word for word in shlex.split(command_line()))


def command_line() -> str:
    """This process's command line as the user typed it: `hypotrack run h06 --no-peft`."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    if program in ("__main__.py", "cli") or program.startswith("hypotrack"):
        program = "hypotrack"  # `python -m hypotrack.cli` and the console script are the same command
    return shlex.join([program, *sys.argv[1:]])
