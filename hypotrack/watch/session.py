"""`watch(trainer)`: hypotrack's diagnostics on a GRPOTrainer hypotrack did not build.

The trainer instance is instrumented (hooks/_trainer_tap.py wraps the same GRPOTrainer methods
hypotrack's own subclass overrides), a callback gives the hooks the events a callback sees, checks the
gates at each step end and stops training through TRL's ``control.should_training_stop`` when a gate
named in ``stop_on`` fails. ``trainer.train`` is wrapped so that the run is triaged and recorded in
the registry whether it finishes, is stopped by a gate, or raises.
"""

from __future__ import annotations

import inspect
import logging
import warnings
from collections.abc import Iterable
from typing import Any

from transformers import Trainer

from hypotrack.errors import HypotrackError
from hypotrack.hooks._trainer_tap import TapCallback, TrainerTap, instrument, record_into
from hypotrack.hooks.gates import GateFailure, GatesHook
from hypotrack.hooks.hookset import HookSet
from hypotrack.watch.select import GATES, hook_plan, stop_names

logger = logging.getLogger("hypotrack.watch")


class GateFailed(UserWarning):
    """A live invariant gate failed: the message has the numbers and the hypothesis it points to."""


class Watch(TapCallback):
    """The diagnostics attached to one trainer; also the TrainerCallback that drives them."""

    def __init__(self, hypotheses: Iterable[str] | str | None = None, hooks: Iterable[str] | str | None = None,
                 stop_on: Iterable[str] | str | None = None, gates: bool = True, task_reward: str | None = None,
                 reference_column: str | None = None, record: bool = True, registry: str | None = None,
                 hook_settings: dict[str, dict[str, Any]] | None = None) -> None:
        self.stop_on = stop_names(stop_on, gates)
        names, settings = hook_plan(hypotheses, hooks, gates)
        for hook, values in (hook_settings or {}).items():
            settings.setdefault(hook, {}).update(values)
        from hypotrack.hooks import build_hooks

        super().__init__(HookSet(build_hooks(names, settings)))
        self.hook_names = names
        self.task_reward, self.reference_column = task_reward, reference_column
        self.record, self.registry_url = record, registry
        self.gates: GatesHook | None = next((h for h in self.hookset if isinstance(h, GatesHook)), None)
        self.warned: set[str] = set()
        self.stopped_by: GateFailure | None = None
        self.outcome: str | None = None  # finished | stopped | crashed, once training is over
        self.crash_cause: str | None = None  # the hypothesis a crash's error names (hypotrack/known_failures.py)
        self.triage_id: str | None = None
        self.report: Any = None  # the TriageReport of the run, once recorded

    # ----------------------------------------------------------------- attaching

    def attach(self, trainer: Any) -> "Watch":
        """Instrument ``trainer`` (once); `watch()` and `HypotrackCallback` call this."""
        _check_trainer(trainer)
        if self.trainer is trainer:
            return self
        if getattr(trainer, "_hypotrack_watch", None) is not None:
            raise ValueError("this trainer is already watched by hypotrack")
        self.trainer = trainer
        trainer._hypotrack_watch = self
        self.hookset.record = record_into(trainer)
        self.tap = TrainerTap(self.hookset, reference_column=self.reference_column)
        instrument(trainer, self.tap)
        if self not in trainer.callback_handler.callbacks:
            trainer.add_callback(self)
        _wrap_train(trainer, self)
        return self

    def on_init_end(self, args, state, control, **kwargs):
        """As `HypotrackCallback` in ``callbacks=[...]``: transformers hands callbacks the model, not the
        trainer, so the trainer is found as the `self` of the Trainer.__init__ that fires this event."""
        if self.trainer is None:
            self.attach(_calling_trainer())

    def on_train_begin(self, args, state, control, **kwargs):
        self.tap.task_index = _task_index(self.trainer, self.task_reward)  # GRPOTrainer has its reward functions now
        super().on_train_begin(args, state, control, **kwargs)

    # ----------------------------------------------------------------- gates

    def on_step_end(self, args, state, control, **kwargs):
        super().on_step_end(args, state, control, **kwargs)
        # Gates report during their first steps and the rollout after them; the check is a collective under
        # accelerate, so every process makes it at the same steps, whatever its own gates found.
        if self.gates is None or state.global_step > self.gates.config.steps + 1:
            return
        new = [f for f in self.gates.failures if f.gate not in self.warned]
        for failure in new:
            self.warned.add(failure.gate)
            if state.is_world_process_zero:
                warnings.warn(str(failure), GateFailed, stacklevel=2)
        stop = next((f for f in self.gates.failures if self._stops(f)), None)
        if _any_process(self.trainer, stop is not None):  # every rank stops together, or none does
            control.should_training_stop = True
            self.stopped_by = stop or GateFailure("other process", "", state.global_step, "a gate failed on another "
                                                  "process")
            self.hookset.record("diag/gates/stopped", 1.0)

    def _stops(self, failure: GateFailure) -> bool:
        return GATES in self.stop_on or failure.hypothesis in self.stop_on or failure.gate in self.stop_on

    def failures(self) -> list[GateFailure]:
        return list(self.gates.failures) if self.gates is not None else []

    # ----------------------------------------------------------------- the end of the run

    def finish(self, outcome: str) -> None:
        """Triage the run and record it in the registry (main process only); never raises."""
        self.outcome = outcome
        self.hookset.close()
        if not self.record or not self.trainer.is_world_process_zero():
            return
        from hypotrack.watch.record import record_run

        try:
            self.report, self.triage_id = record_run(self, self.trainer)
        except Exception as exc:  # noqa: BLE001 - the user's training result matters more than its triage
            warnings.warn(f"hypotrack could not triage and record this run: {exc}", stacklevel=3)


class HypotrackCallback(Watch):
    """`watch` as a callback: ``GRPOTrainer(..., callbacks=[HypotrackCallback(hypotheses=["h06"])])``."""


def watch(trainer: Any, hypotheses: Iterable[str] | str | None = None, hooks: Iterable[str] | str | None = None,
          stop_on: Iterable[str] | str | None = None, **options: Any) -> Watch:
    """Attach hypotrack's diagnostics to a GRPOTrainer (any subclass); returns the `Watch`.

    ``hypotheses``: ids (or "all") whose declared hooks to attach; ``hooks``: hook names (or "all");
    without either only the live gates are attached. ``stop_on``: ["gates"] stops training on any failed
    gate, a list of gate names (ratio, ref_kl, grad, parity, lora) or of the hypotheses they point to (h08,
    h18, h19, h14, h06) on those gates; any other name is refused, since it would never stop anything.
    ``options``: gates (False: none), task_reward, reference_column, record (False: no registry record),
    registry (URL). Call it once per trainer: a script that trains twice watches each trainer the same way.
    """
    return Watch(hypotheses, hooks, stop_on, **options).attach(trainer)


def _check_trainer(trainer: Any) -> None:
    """A GRPOTrainer (TRL's or a subclass, the user's own included) is what watch instruments; anything else is
    refused with what was passed and what to pass instead."""
    from hypotrack.hooks._trainer_tap import WRAPPED_METHODS

    if isinstance(trainer, Trainer) and all(callable(getattr(trainer, name, None)) for name in WRAPPED_METHODS):
        return
    kind = type(trainer).__name__
    import torch

    if trainer is None:
        hint = "got None"
    elif isinstance(trainer, type):
        hint = f"got the class {trainer.__name__}: build the trainer and pass it, hypotrack.watch(trainer)"
    elif isinstance(trainer, torch.nn.Module):
        hint = (f"{kind} is a model: build the GRPOTrainer with it (GRPOTrainer(model=...)) and pass the trainer, "
                "hypotrack.watch(trainer)")
    elif isinstance(trainer, Trainer):
        hint = f"{kind} is a transformers Trainer without GRPO's rollouts: hypotrack watches GRPO training only"
    else:
        hint = f"got an instance of {kind}"
    raise HypotrackError(f"hypotrack.watch takes a trl GRPOTrainer (or a subclass of it): {hint}")


def _wrap_train(trainer: Any, session: Watch) -> None:
    train = trainer.train

    def watched_train(*args: Any, **kwargs: Any):
        try:
            result = train(*args, **kwargs)
        except BaseException as exc:
            _known_cause(session, exc)
            session.finish("crashed")
            raise
        session.finish("stopped" if session.stopped_by is not None else "finished")
        return result

    trainer.train = watched_train


def _known_cause(session: Watch, exc: BaseException) -> None:
    """A crash whose error is a known cause's names its hypothesis, in a warning and in the run's record."""
    from hypotrack.known_failures import explain

    known = explain(f"{type(exc).__name__}: {exc}")
    if known is None:
        return
    session.crash_cause = known.hypothesis
    warnings.warn(f"hypotrack: this error is {known.hypothesis}'s cause: {known.means} (`hypotrack run "
                  f"{known.hypothesis}` tests it on this script)", stacklevel=3)


def _task_index(trainer: Any, task_reward: str | None) -> int:
    names = list(trainer.reward_func_names)
    if task_reward is None:
        weights = [float(w) for w in trainer.reward_weights]
        return max(range(len(weights)), key=lambda i: (weights[i], -i))  # the heaviest, else the first
    if task_reward not in names:
        raise ValueError(f"watch(task_reward={task_reward!r}): the trainer's reward functions are {names}")
    return names.index(task_reward)


def _calling_trainer() -> Any:
    frame = inspect.currentframe()
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Trainer):
            return candidate
        frame = frame.f_back
    raise RuntimeError("HypotrackCallback found no Trainer constructing it; call hypotrack.watch(trainer) instead")


def _any_process(trainer: Any, flag: bool) -> bool:
    """Whether ``flag`` holds on any process (a collective: every process calls it at the same step)."""
    accelerator = trainer.accelerator
    if accelerator.num_processes == 1:
        return flag
    import torch

    return bool(accelerator.reduce(torch.tensor([float(flag)], device=accelerator.device), reduction="sum").item())
