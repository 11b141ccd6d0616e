"""A worker forked from the runner's forkserver (run/launching/forkserver.py) becomes what a spawned worker is.

Its own session (the process group the runner signals), SIGTERM when the runner dies, the arm's
environment, the arm's log file as stdout and stderr, then `hypotrack.worker.main`. It exits with the
worker's code and skips multiprocessing's teardown, as a spawned `python -m hypotrack.worker` would.

Its parent is the forkserver, not the runner, and the forkserver outlives a runner killed with SIGKILL
while it has children, so a parent-death signal is not enough: a thread waits on a pidfd of the runner
and sends the worker SIGTERM when the runner is gone, as PR_SET_PDEATHSIG does for a spawned worker.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading

from hypotrack.worker.main import die_with_parent, main


def run(spec_path: str, env: dict[str, str], log_path: str, runner_pid: int) -> None:
    os.setsid()
    die_with_parent()
    _end_with(runner_pid)
    os.environ.update(env)
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # main installs the worker's own handlers
    # SystemExit: multiprocessing's bootstrap makes the code the process's exit code after running the
    # finalizers, which give back what the run registered with the runner's resource tracker (tqdm's locks)
    sys.exit(main([spec_path]))


def _end_with(runner_pid: int) -> None:
    """SIGTERM this worker when the runner process ends (however it ends)."""
    try:
        runner = os.pidfd_open(runner_pid)
    except ProcessLookupError:  # gone already
        os.kill(os.getpid(), signal.SIGTERM)
        return
    except OSError:  # no pidfd on this kernel: the forkserver's own end is the only signal left
        return

    def wait() -> None:
        select.select([runner], [], [])  # readable once the runner has exited
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=wait, name="hypotrack-runner-watch", daemon=True).start()
