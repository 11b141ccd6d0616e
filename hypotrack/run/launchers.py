"""How a worker starts: a local process (`python`), `accelerate launch` (one arm over several processes or
GPUs), or a Ray task (`ray`, locally or on a cluster; hypotrack/run/ray_launch.py).

Whatever the launcher, a worker hands back a `Worker` (poll, terminate, wait) and its events
land in the arm folder's events.jsonl, which the runner reads with the same EventTail and
handles with the same HANDLERS.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from hypotrack.errors import HypotrackError
from hypotrack.protocol import EVENTS_ENV

LAUNCHERS = ("python", "accelerate", "ray")


@dataclass(frozen=True)
class LaunchOptions:
    launcher: str = "python"
    processes: int | None = None  # accelerate: processes per arm (GPUs, or CPU processes over gloo)
    ray_address: str | None = None  # ray: an existing cluster ("auto", "ray://head:10001"); None starts one here


class Worker(Protocol):
    """One arm's running worker, as the scheduling loop sees it."""

    def poll(self) -> int | None:
        """The exit code once the worker ended (its files are then in the arm folder), else None."""

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        """Ask it to stop (SIGTERM: cleanly; SIGKILL: now)."""

    def wait(self, timeout: float | None = None) -> int:
        """Block until it ended; raises subprocess.TimeoutExpired."""


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
            from hypotrack.run import forkserver

            if forkserver.enabled():
                return forkserver.start(spec_path, extra, log_path)
        return ProcessWorker(spawn(self.command(spec_path), {**os.environ, **extra}, log_path))

    def close(self) -> None:
        """Release what the launcher holds (a Ray connection); local processes need nothing."""


class AccelerateLauncher(Launcher):
    """`accelerate launch`: one arm trained by several processes; only rank 0 writes events and files.

    Without `--processes` the user's `accelerate config` decides (all GPUs by default). On a
    machine without GPUs, several processes run as torchrun ranks over gloo: accelerate's own
    `--cpu` starts a single process unless MPI is set up, while its torchrun path with
    ACCELERATE_USE_CPU gives a CPU process group.
    """

    def __init__(self, options: LaunchOptions) -> None:
        super().__init__(options)
        self.cpu_only = not _has_gpu()

    @property
    def processes(self) -> int:
        return self.options.processes or 1

    def command(self, spec_path: Path) -> list[str]:
        # `accelerate launch` of the runner's own Python (no PATH lookup), with its own rendezvous port
        # per arm: arms that run side by side must not meet on accelerate's default.
        command = [sys.executable, "-m", "accelerate.commands.launch", "--main_process_port", str(free_port())]
        if self.cpu_only:
            mode = ["--multi_gpu"] if self.processes > 1 else ["--cpu"]
            command += [*mode, "--num_processes", str(self.processes), "--num_machines", "1",
                        "--mixed_precision", "no", "--dynamo_backend", "no"]
        elif self.options.processes:
            command += ["--num_processes", str(self.options.processes)]
        return [*command, "-m", "hypotrack.worker", str(spec_path)]

    def environment(self, threads: int) -> dict[str, str]:
        env = worker_env(max(1, threads // self.processes) if self.cpu_only else threads)
        if self.cpu_only:
            env["ACCELERATE_USE_CPU"] = "true"
        return env


def check(options: LaunchOptions) -> None:
    """Refuse settings that cannot work, before the test is recorded; starts nothing (a Ray cluster's address
    is probed with one TCP connection)."""
    if options.launcher not in LAUNCHERS:
        raise HypotrackError(f"--launcher {options.launcher!r}: unknown launcher (known: {', '.join(LAUNCHERS)})")
    if options.processes is not None and options.launcher != "accelerate":
        raise HypotrackError(f"--processes: only --launcher accelerate trains one arm over several processes "
                             f"(this run uses --launcher {options.launcher})")
    if options.ray_address and options.launcher != "ray":
        raise HypotrackError(f"--ray-address: only --launcher ray uses a Ray cluster "
                             f"(this run uses --launcher {options.launcher})")
    if options.launcher == "accelerate" and importlib.util.find_spec("accelerate") is None:
        raise HypotrackError("--launcher accelerate: accelerate is not installed in this Python "
                             "(pip install accelerate, then run `accelerate config` on the GPU machine)")
    if options.launcher == "ray" and importlib.util.find_spec("ray") is None:
        raise HypotrackError('--launcher ray: Ray is not installed in this Python (pip install "hypotrack[ray]")')
    if options.launcher == "ray" and options.ray_address:
        from hypotrack.run.ray_launch import probe_cluster

        probe_cluster(options.ray_address)  # a cluster that does not answer is refused before the test is recorded


def open_launcher(options: LaunchOptions | str) -> Launcher:
    """The launcher for this test (a Ray launcher connects to its cluster here)."""
    if isinstance(options, str):
        options = LaunchOptions(options)
    check(options)
    if options.launcher == "accelerate":
        return AccelerateLauncher(options)
    if options.launcher == "ray":
        from hypotrack.run.ray_launch import RayLauncher

        return RayLauncher(options)
    return Launcher(options)


def default_parallel(options: LaunchOptions | str, count: int) -> int:
    """How many arms run at once when --parallel is not given."""
    name = options if isinstance(options, str) else options.launcher
    if name == "accelerate":
        return 1  # each arm already spreads over every GPU (or core) of the machine
    return max(1, min(count, os.cpu_count() or 1))


# ------------------------------------------------------------------ local processes


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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()
