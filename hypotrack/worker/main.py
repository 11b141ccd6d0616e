"""One training run (one arm x seed) in its own process.

It reads the ArmSpec, trains the arm with the trainer its experiment names, and
streams events to the runner. Exit codes: 0 finished, 1 failed, 143 stopped by
SIGTERM or SIGINT.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from hypotrack.errors import HypotrackError
from hypotrack.protocol import ArmSpec, Event, EventWriter, versions

# The worker never talks to MLflow (the runner does): keep transformers and TRL from importing it
# (about 1.4 s of every arm's start) and from adding their own MLflow callback.
os.environ.setdefault("DISABLE_MLFLOW_INTEGRATION", "TRUE")


class Stopped(BaseException):
    """Raised in the training loop by SIGTERM/SIGINT so the arm ends as killed, cleanly."""


def die_with_parent() -> None:
    """Ask Linux to SIGTERM this worker when the runner dies (even by SIGKILL)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        PR_SET_PDEATHSIG = 1
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() == 1:  # the runner died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)
    except OSError:
        pass


def _on_signal(signum: int, _frame: Any) -> None:
    raise Stopped(signal.Signals(signum).name)


def _train(spec: ArmSpec, out_dir: Path, events: EventWriter) -> dict[str, float]:
    """The arm's trainer kind decides which module trains it (each imports torch and its stack on use)."""
    if spec.trainer == "grpo":
        from hypotrack.worker.grpo_arm import train
    elif spec.trainer == "critic":
        from hypotrack.worker.critic_arm import train
    else:
        from hypotrack.worker.parity_arm import train
    return train(spec, out_dir, events)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec = ArmSpec.model_validate_json(Path(argv[0]).read_text())
    events = EventWriter.from_env()
    die_with_parent()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    out_dir = Path(spec.output_dir)
    rank = int(os.environ.get("RANK", "0"))
    if rank:  # accelerate's other ranks: rank 0 writes the arm's files, the others keep theirs apart
        out_dir = out_dir / f"rank{rank}"
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    try:
        events.emit(Event.STARTED, pid=os.getpid(), versions=versions())
        final = _train(spec, out_dir, events)
        events.emit(Event.FINISHED, seconds=time.time() - started, metrics=final)
        return 0
    except Stopped as exc:
        events.emit(Event.KILLED, reason=f"stopped by {exc}", seconds=time.time() - started)
        return 143
    except HypotrackError as exc:
        events.emit(Event.FAILED, error=str(exc), seconds=time.time() - started)
        return 1
    except Exception as exc:  # noqa: BLE001 - any crash stays in its arm, with the reason
        (out_dir / "traceback.txt").write_text(traceback.format_exc())
        message = f"{type(exc).__name__}: {exc}".strip()
        events.emit(Event.FAILED, error=message.splitlines()[0][:500], seconds=time.time() - started)
        return 1
