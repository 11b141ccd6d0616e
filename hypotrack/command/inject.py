"""Inside the user's command: watch every GRPOTrainer the script creates, and stream the arm's events.

`install()` runs at interpreter start-up (bootstrap/sitecustomize.py) and imports nothing heavy: it
registers an import hook for `trl.trainer.grpo_trainer`, and when the script's own import loads that
module, `GRPOTrainer.__init__` is wrapped. Each trainer constructed (a subclass of the user's own
included, after its whole `__init__` chain ran) then gets what a hypotrack worker's trainer gets:

- the hypothesis's hooks, through `hypotrack.watch` (no registry record: the runner records the test);
- the runner's metrics stream (hypotrack's TrainingCallback: TRL's logs plus the hooks' diag/* each step);
- the CONFIG event when it is built, and FINISHED / FAILED / KILLED when its `train()` returns or raises.

A command that never builds a GRPOTrainer sends no CONFIG; the runner then fails the arm with that.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
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

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        config = kwargs.get("args", args[2] if len(args) > 2 else None)
        if getattr(config, "use_vllm", False):  # before TRL builds vLLM's engine, as hypotrack's own worker does
            from hypotrack.vllm_cpu import apply
            from hypotrack.worker.grpo_arm import own_rendezvous_port, serve_in_dtype

            own_rendezvous_port()
            apply()
            model = kwargs.get("model", args[0] if args else None)
            if _session is not None and hasattr(model, "parameters"):  # a model the script loaded itself
                serve_in_dtype(_session.spec.generator_dtype, model)
        original(self, *args, **kwargs)
        if getattr(self, "_hypotrack_watch", None) is None:
            _attach(self)

    grpo_trainer.__init__ = __init__


def _attach(trainer: Any) -> None:
    from hypotrack.watch.session import Watch
    from hypotrack.worker.grpo_arm import TrainingCallback, _jsonable

    assert _session is not None
    spec, events = _session.spec, _session.events
    names = list(trainer.reward_func_names)
    task = spec.task_reward_name
    if task not in names:
        message = (f"the experiment's task_reward {task!r} is not one of the reward functions this script's "
                   f"GRPOTrainer logs ({', '.join(names)}): set task_reward (and command.reward_functions) in "
                   f"experiment {spec.experiment_name!r} to the name TRL logs, rewards/<name>/mean")
        events.emit(Event.FAILED, error=message, seconds=time.time() - _session.started)
        raise SystemExit(f"hypotrack: {message}")
    from hypotrack.worker import repairs

    repairs.apply(trainer, spec, rewards_wrapped=False)  # treatments hypotrack does inside the script's trainer
    Watch(hooks=spec.hooks, gates=False, task_reward=task, reference_column=spec.data.get("reference_column"),
          record=False, hook_settings=spec.hook_settings).attach(trainer)
    callback = TrainingCallback(events, spec.max_steps, task)
    callback.trainer = trainer
    trainer.add_callback(callback)
    dataset = getattr(trainer, "train_dataset", None)
    events.emit(Event.CONFIG, grpo=_jsonable(trainer.args.to_dict()), versions=versions(),
                trainable_parameters=sum(p.numel() for p in trainer.model.parameters() if p.requires_grad),
                dataset_rows=_length(dataset), heldout_rows=0,
                dataset_digest=getattr(dataset, "_fingerprint", None),
                dataset_columns=list(getattr(dataset, "column_names", None) or []),
                model_source=getattr(trainer.model, "name_or_path", ""))
    _wrap_train(trainer, callback)


def _wrap_train(trainer: Any, callback: Any) -> None:
    assert _session is not None
    events, started = _session.events, _session.started
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
        events.emit(Event.FINISHED, seconds=time.time() - started, metrics=callback.last_metrics)
        return result

    trainer.train = hypotrack_train


def _length(dataset: Any) -> int | None:
    try:
        return len(dataset)
    except TypeError:  # an iterable dataset
        return None


__all__ = ["install"]
