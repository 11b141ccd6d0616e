"""What a forkserver imports once, so each worker forked from it starts without importing them again.

The heavy part of a worker's start-up is importing torch, transformers, peft and TRL (about 5 s on this
project's 2-core machine). None of these imports initialises CUDA, so forking after them is safe; the
runner never forks from a process that has (run/launching/forkserver.py checks).
"""

import os

# As in worker/main.py, before transformers is imported: the worker never talks to MLflow.
os.environ.setdefault("DISABLE_MLFLOW_INTEGRATION", "TRUE")

import peft  # noqa: F401 - imported to be forked, not used
import torch  # noqa: F401 - imported to be forked, not used
import transformers  # noqa: F401 - imported to be forked, not used
import trl  # noqa: F401 - imported to be forked, not used
from trl.trainer import grpo_trainer  # noqa: F401 - TRL imports its trainers lazily

import hypotrack.worker.grpo_arm
import hypotrack.worker.main  # noqa: F401 - imported to be forked, not used
