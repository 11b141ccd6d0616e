"""Start `python` workers from a forkserver that has imported torch, transformers, peft and TRL once.

A worker started as `python -m hypotrack.worker SPEC` spends about 5 s of its start importing those
(8-10 s under load). The standard library's forkserver process imports them once per runner
(`set_forkserver_preload`, hypotrack/worker/preload.py) and forks each worker from there, so a test or
a self-test pays the imports once. The child then becomes what a spawned worker is
(hypotrack/worker/forked.py).

It is used where it is safe: on Linux, unless HYPOTRACK_FORKSERVER=0, and never once this process has
initialised CUDA (the forkserver would inherit nothing from it, but the rule is cheap to keep).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

FORKSERVER_ENV = "HYPOTRACK_FORKSERVER"  # "0": start every worker as its own `python -m hypotrack.worker`
PRELOAD = ["hypotrack.worker.preload"]
WORKER_ENTRY = "hypotrack.worker.forked:run"  # what the forked child runs (hypotrack/worker/forked.py)

_context: Any = None


def enabled() -> bool:
    if os.environ.get(FORKSERVER_ENV, "1") == "0" or not sys.platform.startswith("linux"):
        return False
    torch = sys.modules.get("torch")
    return not (torch is not None and torch.cuda.is_initialized())


def _forkserver() -> Any:
    global _context
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(PRELOAD)
        _context = context
    return _context


def start(spec_path: Path, env: dict[str, str], log_path: Path) -> "ForkedWorker":
    """One worker forked from the forkserver; ``env`` is what it gets on top of the runner's environment."""
    process = _forkserver().Process(target=_enter, args=(WORKER_ENTRY, str(spec_path), env, str(log_path), os.getpid()),
                                    name=f"hypotrack.worker {spec_path.parent.name}")
    process.start()
    return ForkedWorker(process)


def _enter(entry: str, *args: Any) -> None:
    """Run the worker's entry point, named as text as `python -m hypotrack.worker` names it on a command line:
    the runner imports no worker code (the child is the worker)."""
    import importlib

    module, name = entry.split(":")
    getattr(importlib.import_module(module), name)(*args)


class ForkedWorker:
    """A forked worker as the scheduling loop sees any worker (run/arms.py Worker)."""

    def __init__(self, process: Any) -> None:
        self.process = process

    def poll(self) -> int | None:
        return self.process.exitcode

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:  # not its own group yet (it had not reached setsid): the process itself
            os.kill(self.process.pid, sig)

    def wait(self, timeout: float | None = None) -> int:
        self.process.join(timeout)
        if self.process.exitcode is None:
            raise subprocess.TimeoutExpired(self.process.name, timeout or 0)
        return self.process.exitcode
