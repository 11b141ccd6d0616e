"""One training run (one arm x seed) in its own process: `python -m hypotrack.worker SPEC.json`.

It builds the model, data, rewards and trainer from the ArmSpec, attaches the
hooks, trains, and streams metrics to the runner; it never imports mlflow (the
runner is the only MLflow client). Exit codes: 0 finished, 1 failed, 143 stopped by SIGTERM.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from .arms import ArmSpec
from .errors import HypotrackError
from .events import EventWriter


class Stopped(BaseException):
    """Raised in the training loop by SIGTERM/SIGINT so the arm ends as killed, cleanly."""


def _die_with_parent() -> None:
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


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("hypotrack", "trl", "transformers", "torch", "peft", "datasets", "accelerate"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def toy_task(model: str) -> str | None:
    """The toy-lab task a model name like 'toy:arith' asks for (None for any other model)."""
    if not model.startswith("toy:"):
        return None
    from .toy.lab import TASKS

    task = model[len("toy:"):]
    if task not in TASKS:
        raise HypotrackError(f"model {model!r}: unknown toy task (known: {', '.join('toy:' + t for t in TASKS)})")
    return task


def resolve_model_path(model: str, events: EventWriter | None = None) -> str:
    """A loadable model path; 'toy:TASK' is built into the cache on first use (the arm's progress says so)."""
    task = toy_task(model)
    if task is None:
        return model
    from .toy.lab import ensure_model, is_built

    if events is not None and not is_built(task):
        events.emit("phase", text=f"building the {task} toy model, first run only")
    return str(ensure_model(task))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec = ArmSpec.model_validate_json(Path(argv[0]).read_text())
    events = EventWriter.from_env()
    _die_with_parent()
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    out_dir = Path(spec.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.time()
    try:
        events.emit("started", pid=os.getpid(), versions=versions())
        if spec.trainer == "grpo":
            from .train_grpo import train

            final = train(spec, out_dir, events)
        elif spec.trainer == "critic":
            from .train_checks import train_critic

            final = train_critic(spec, out_dir, events)
        else:
            from .train_checks import train_parity

            final = train_parity(spec, out_dir, events)
        events.emit("finished", seconds=time.time() - started, metrics=final)
        return 0
    except Stopped as exc:
        events.emit("killed", reason=f"stopped by {exc}", seconds=time.time() - started)
        return 143
    except HypotrackError as exc:
        events.emit("failed", error=str(exc), seconds=time.time() - started)
        return 1
    except Exception as exc:  # noqa: BLE001 - any crash stays in its arm, with the reason
        (out_dir / "traceback.txt").write_text(traceback.format_exc())
        message = f"{type(exc).__name__}: {exc}".strip()
        events.emit("failed", error=message.splitlines()[0][:500], seconds=time.time() - started)
        return 1


if __name__ == "__main__":
    sys.exit(main())
