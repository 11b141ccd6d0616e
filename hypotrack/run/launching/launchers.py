"""How a worker starts: a local process (`python`), `accelerate launch` (one arm over several processes or
GPUs), or a Ray task (`ray`, locally or on a cluster; ray_launch.py). The options, the local launcher and the
worker's process live in base.py.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from hypotrack.errors import HypotrackError
from hypotrack.ports import unclaimed_port
from hypotrack.run.launching.base import LAUNCHERS, Launcher, LaunchOptions, worker_env


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
        command = [sys.executable, "-m", "accelerate.commands.launch", "--main_process_port", str(unclaimed_port())]
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
        from hypotrack.run.launching.ray_launch import probe_cluster

        probe_cluster(options.ray_address)  # a cluster that does not answer is refused before the test is recorded


def open_launcher(options: LaunchOptions | str) -> Launcher:
    """The launcher for this test (a Ray launcher connects to its cluster here)."""
    if isinstance(options, str):
        options = LaunchOptions(options)
    check(options)
    if options.launcher == "accelerate":
        return AccelerateLauncher(options)
    if options.launcher == "ray":
        from hypotrack.run.launching.ray_launch import RayLauncher

        return RayLauncher(options)
    return Launcher(options)


def default_parallel(options: LaunchOptions | str, count: int) -> int:
    """How many arms run at once when --parallel is not given."""
    name = options if isinstance(options, str) else options.launcher
    if name == "accelerate":
        return 1  # each arm already spreads over every GPU (or core) of the machine
    return max(1, min(count, os.cpu_count() or 1))


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()
