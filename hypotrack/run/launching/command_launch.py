"""Start a command experiment's arm: the user's own command, instrumented from outside.

The command runs as written (in its folder, with its arm's flags) in a process group of its own, like a
hypotrack worker; its environment puts hypotrack's bootstrap first on PYTHONPATH. Python imports the
bootstrap's `sitecustomize` at start-up, which watches every GRPOTrainer the script creates and streams the
arm's events to the runner (hypotrack/command/). MLflow logging the script does itself goes to a store in
the arm's folder: the runner owns the arm's MLflow run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hypotrack.command import BOOTSTRAP_DIR, SPEC_ENV
from hypotrack.protocol import EVENTS_ENV, ArmSpec
from hypotrack.run.arms import ARM_OUTPUT
from hypotrack.run.launching.base import ProcessWorker, set_parent_death_signal, worker_env


def command_environment(spec: ArmSpec, spec_path: Path, events_path: Path, threads: int) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(BOOTSTRAP_DIR), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, **worker_env(threads), **spec.command_env, "PYTHONPATH": path, SPEC_ENV: str(spec_path),
            EVENTS_ENV: str(events_path),
            "MLFLOW_TRACKING_URI": f"sqlite:///{spec_path.parent / 'script_mlflow.db'}"}


def start_command(spec: ArmSpec, spec_path: Path, events_path: Path, log_path: Path, threads: int) -> ProcessWorker:
    output = str(spec_path.parent / "output")
    argv = [arg.replace(ARM_OUTPUT, output) for arg in spec.command]
    env = {key: value.replace(ARM_OUTPUT, output)
           for key, value in command_environment(spec, spec_path, events_path, threads).items()}
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    try:
        process = subprocess.Popen(argv, cwd=spec.command_cwd or None, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                   preexec_fn=set_parent_death_signal)
    finally:
        log.close()
    return ProcessWorker(process)
