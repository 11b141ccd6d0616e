"""How a worker process is started. Swappable: plain python, or `accelerate launch` for multi-GPU."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from hypotrack.errors import HypotrackError
from hypotrack.protocol import EVENTS_ENV

LAUNCHERS = ("python", "accelerate")


def _set_parent_death_signal() -> None:
    """Runs in the child before exec: die with the runner, even if the runner is SIGKILLed."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except OSError:
            pass


def command(launcher: str, spec_path: Path) -> list[str]:
    if launcher == "python":
        return [sys.executable, "-m", "hypotrack.worker", str(spec_path)]
    if launcher == "accelerate":
        exe = shutil.which("accelerate")
        if exe is None:
            raise HypotrackError("--launcher accelerate: the `accelerate` command is not on PATH "
                                 "(pip install accelerate, then run `accelerate config` on the GPU machine)")
        return [exe, "launch", "-m", "hypotrack.worker", str(spec_path)]
    raise HypotrackError(f"--launcher {launcher!r}: unknown launcher (known: {', '.join(LAUNCHERS)})")


def start(launcher: str, spec_path: Path, events_path: Path, log_path: Path, threads: int) -> subprocess.Popen:
    env = dict(os.environ)
    env.update({
        EVENTS_ENV: str(events_path),
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
        "TRANSFORMERS_VERBOSITY": env.get("TRANSFORMERS_VERBOSITY", "warning"),
    })
    log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    try:
        # Own session: a Ctrl-C in the terminal reaches only the runner, which then stops
        # the workers in order and records the outcome.
        return subprocess.Popen(command(launcher, spec_path), stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                preexec_fn=_set_parent_death_signal)
    finally:
        log.close()


def terminate(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Signal the worker's whole process group (accelerate's ranks included)."""
    try:
        os.killpg(process.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
