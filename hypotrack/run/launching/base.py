"""What every launcher shares: the options, a worker as the scheduling loop sees it, and local processes.

`Launcher` starts a worker as a local process (`python -m hypotrack.worker SPEC`, forked from the forkserver
where it can be); launchers.py chooses among it, `accelerate launch` and Ray (ray_launch.py), which build on
what is here. Whatever the launcher, a worker hands back a `Worker` (poll, terminate, wait) and its events land
in the arm folder's events.jsonl.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from hypotrack.protocol import EVENTS_ENV
from hypotrack.run.arms import Worker

LAUNCHERS = ("python", "accelerate", "ray")


@dataclass(frozen=True)
class LaunchOptions:
    launcher: str = "python"
    processes: int | None = None  # accelerate: processes per arm (GPUs, or CPU processes over gloo)
    ray_address: str | None = None  # ray: an existing cluster ("auto", "ray://head:10001"); None starts one here


class Launcher:
    """Starts workers as local processes: `python -m hypotrack.worker SPEC`."""

    def __init__(self, options: LaunchOptions) -> None:
        self.options = options

    def command(self, spec_path: Path) -> list[str]:
        return [sys.executable, "-m", "hypotrack.worker", str(spec_path)]

    def environment(self, threads: int) -> dict[str, str]:
        return worker_env(threads)

    def start(self, spec_path: Path, events_path: Path, log_path: Path, threads: int) -> Worker:
        extra = {**self.environment(threads), EVENTS_ENV: str(events_path)}
        if type(self) is Launcher:  # a plain local worker: fork it from the process that imported TRL once
            from hypotrack.run.launching import forkserver

            if forkserver.enabled():
                return forkserver.start(spec_path, extra, log_path)
        return ProcessWorker(spawn(self.command(spec_path), {**os.environ, **extra}, log_path))

    def close(self) -> None:
        """Release what the launcher holds (a Ray connection); local processes need nothing."""


def worker_env(threads: int) -> dict[str, str]:
    """What every worker process gets on top of its parent's environment."""
    return {
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
        "TRANSFORMERS_VERBOSITY": os.environ.get("TRANSFORMERS_VERBOSITY", "warning"),
    }


def set_parent_death_signal() -> None:
    """Runs in the child before exec: die with the runner, even if the runner is SIGKILLed."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass


def spawn(command: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen:
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    try:
        # Own session: a Ctrl-C in the terminal reaches only the runner, which then stops
        # the workers in order and records the outcome.
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                start_new_session=True, preexec_fn=set_parent_death_signal)
    finally:
        log.close()


def signal_group(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Signal the worker's whole process group (accelerate's ranks included)."""
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


class ProcessWorker:
    def __init__(self, process: subprocess.Popen) -> None:
        self.process = process

    def poll(self) -> int | None:
        return self.process.poll()

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        signal_group(self.process, sig)

    def wait(self, timeout: float | None = None) -> int:
        return self.process.wait(timeout=timeout)
