"""Inside the user's command: the arm's session on every GRPOTrainer the script creates.

`install()` runs at interpreter start-up (bootstrap/sitecustomize.py) and imports nothing heavy: it
registers an import hook for `trl.trainer.grpo_trainer`, and when the script's own import loads that
module, `GRPOTrainer.__init__` is wrapped. Each trainer constructed (a subclass of the user's own
included, after its whole `__init__` chain ran) then gets the session a hypotrack worker's trainer gets
(hypotrack/session/: faults, treatments, hooks, guards, samples, the metrics stream, the CONFIG event); its
`train()` then writes the arm's files and sends FINISHED, FAILED or KILLED as it returns or raises.

A command that never builds a GRPOTrainer sends no CONFIG; the runner then fails the arm with that.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import inspect
import os
import sys
import time
from pathlib import Path
from typing import Any

from hypotrack.command import SPEC_ENV
from hypotrack.protocol import ArmSpec, Event, EventWriter, versions

GRPO_MODULE = "trl.trainer.grpo_trainer"


class _Session:
    """This process's arm: its spec and its event stream (rank 0 only writes)."""

    def __init__(self) -> None:
        self.spec = ArmSpec.model_validate_json(Path(os.environ[SPEC_ENV]).read_text())
        self.events = EventWriter.from_env()
        self.started = time.time()


_session: _Session | None = None


def install() -> None:
    """Switch the instrumentation on for this process (idempotent)."""
    global _session
    if _session is not None:
        return
    _session = _Session()
    _session.events.emit(Event.STARTED, pid=os.getpid(), versions=versions())
    if GRPO_MODULE in sys.modules:  # imported before us (a sitecustomize of the user's own): patch it now
        _patch(sys.modules[GRPO_MODULE].GRPOTrainer)
    else:
        sys.meta_path.insert(0, _GRPOModuleFinder())


class _GRPOModuleFinder(importlib.abc.MetaPathFinder):
    """Lets TRL's GRPO module load as usual, then wraps its GRPOTrainer before anyone can use it."""

    def find_spec(self, name: str, path: Any = None, target: Any = None):
        if name != GRPO_MODULE:
            return None
        sys.meta_path.remove(self)  # once: the module is imported once per process
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module: Any) -> None:
            exec_module(module)
            _patch(module.GRPOTrainer)

        spec.loader.exec_module = exec_and_patch  # type: ignore[method-assign]
        return spec


def _patch(grpo_trainer: type) -> None:
    original = grpo_trainer.__init__
    signature = inspect.signature(original)

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if _session is None or getattr(self, "_hypotrack_session", None) is not None:
            original(self, *args, **kwargs)
            return
        session = self._hypotrack_session = _arm_session()
        # what the session changes before TRL's constructor runs: the model a planted fault builds the trainer
        # with, and vLLM's engine, which the constructor builds
        bound = signature.bind(self, *args, **kwargs)
        given = bound.arguments
        given["model"], peft_config = session.trainer_inputs(given["model"], given.get("peft_config"),
                                                             given.get("args"))
        if peft_config is not None or "peft_config" in given:
            given["peft_config"] = peft_config
        original(*bound.args, **bound.kwargs)
        _attach(self, session)

    grpo_trainer.__init__ = __init__


def _arm_session() -> Any:  # an ArmSession
    from hypotrack.errors import HypotrackError
    from hypotrack.session import ArmSession

    assert _session is not None
    try:
        return ArmSession.for_arm(_session.spec, _session.events)
    except HypotrackError as exc:
        _fail(str(exc))


def _attach(trainer: Any, session: Any) -> None:  # an ArmSession
    from hypotrack.errors import HypotrackError

    assert _session is not None
    spec = _session.spec
    if spec.task_reward_name not in trainer.reward_func_names:
        _fail(f"the experiment's task_reward {spec.task_reward_name!r} is not one of the reward functions this "
              f"script's GRPOTrainer logs ({', '.join(trainer.reward_func_names)}): set task_reward (and "
              f"command.reward_functions) in experiment {spec.experiment_name!r} to the name TRL logs, "
              "rewards/<name>/mean")
    try:
        session.attach(trainer)
    except HypotrackError as exc:
        _fail(str(exc))
    _wrap_train(trainer, session)


def _fail(message: str) -> Any:
    """End the arm before it trains: the runner gets the reason, the script stops with it."""
    assert _session is not None
    _session.events.emit(Event.FAILED, error=message, seconds=time.time() - _session.started)
    raise SystemExit(f"hypotrack: {message}")


def _wrap_train(trainer: Any, session: Any) -> None:  # an ArmSession
    assert _session is not None
    events, started, artifacts = _session.events, _session.started, Path(_session.spec.output_dir) / "artifacts"
    train = trainer.train

    def hypotrack_train(*args: Any, **kwargs: Any):  # whatever the trainer's train returns
        try:
            result = train(*args, **kwargs)
        except KeyboardInterrupt:
            events.emit(Event.KILLED, reason="interrupted", seconds=time.time() - started)
            raise
        except BaseException as exc:
            message = f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:500]
            events.emit(Event.FAILED, error=message, seconds=time.time() - started)
            raise
        finally:
            session.close()
        session.finish(artifacts)
        events.emit(Event.FINISHED, seconds=time.time() - started, metrics=session.last_metrics)
        return result

    trainer.train = hypotrack_train


__all__ = ["install"]
