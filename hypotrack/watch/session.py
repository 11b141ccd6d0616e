"""`watch(trainer)`: hypotrack's diagnostics on a GRPOTrainer hypotrack did not build.

The trainer gets the session every arm gets (hypotrack/session/), with the hooks the user asked for and the
live gates, and without what belongs to hypotrack's own arms (an event stream, guards that stop the run,
samples): it is the user's run. After the session's step end, the gates are checked and training is stopped
through TRL's ``control.should_training_stop`` when a gate named in ``stop_on`` fails. ``trainer.train`` is
wrapped so that the run is triaged and recorded in the registry whether it finishes, is stopped by a gate, or
raises.
"""

from __future__ import annotations

import inspect
import logging
import warnings
from collections.abc import Iterable
from typing import Any

from transformers import Trainer, TrainerCallback

from hypotrack.errors import HypotrackError
from hypotrack.hooks.gates import GateFailure, GatesHook
from hypotrack.session.arm_session import ArmSession
from hypotrack.watch.select import GATES, hook_plan, stop_names

logger = logging.getLogger("hypotrack.watch")


class GateFailed(UserWarning):
    """A live invariant gate failed: the message has the numbers and the hypothesis it points to."""


class Watch(TrainerCallback):
    """The diagnostics attached to one trainer (a callback only to be passed as ``callbacks=[...]``)."""

    def __init__(self, hypotheses: Iterable[str] | str | None = None, hooks: Iterable[str] | str | None = None,
                 stop_on: Iterable[str] | str | None = None, gates: bool = True, task_reward: str | None = None,
                 reference_column: str | None = None, record: bool = True, registry: str | None = None,
                 hook_settings: dict[str, dict[str, Any]] | None = None) -> None:
        self.stop_on = stop_names(stop_on, gates)
        names, settings = hook_plan(hypotheses, hooks, gates)
        for hook, values in (hook_settings or {}).items():
            settings.setdefault(hook, {}).update(values)
        from hypotrack.hooks import build_hooks

        self.session = ArmSession(hooks=build_hooks(names, settings), task_reward=task_reward,
                                  reference_column=reference_column, guards=False, samples=False)
        self.session.step_end_checks.append(self._check_gates)
        self.hookset, self.tap = self.session.hookset, self.session.tap
        self.trainer: Any = None
        self.hook_names = names
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
        if getattr(trainer, "_hypotrack_session", None) is not None:
            raise ValueError("this trainer is already watched by hypotrack")
        self.trainer = trainer
        trainer._hypotrack_session = self.session
        self.session.attach(trainer)
        _wrap_train(trainer, self)
        return self

    def on_init_end(self, args, state, control, **kwargs):
        """As `HypotrackCallback` in ``callbacks=[...]``: transformers hands callbacks the model, not the
        trainer, so the trainer is found as the `self` of the Trainer.__init__ that fires this event."""
        if self.trainer is None:
            self.attach(_calling_trainer())

    # ----------------------------------------------------------------- gates

    def _check_gates(self, state: Any, control: Any) -> None:
        """After the session's step end, where the hooks (the gates among them) read the step. Gates report during
        their first steps and the rollout after them; the check is a collective under accelerate, so every process
        makes it at the same steps, whatever its own gates found."""
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

    def held_gates(self) -> list[tuple[str, str]]:
        """(gate, hypothesis) of each gate that checked the run and found nothing."""
        from hypotrack.hooks.gates import GATE_HYPOTHESES

        if self.gates is None:
            return []
        failed = {f.gate for f in self.gates.failures}
        return [(gate, GATE_HYPOTHESES[gate]) for gate in sorted(self.gates.checked - failed)]

    # ----------------------------------------------------------------- the end of the run

    def finish(self, outcome: str) -> None:
        """Triage the run and record it in the registry (main process only); never raises."""
        self.outcome = outcome
        self.session.close()
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
    gate, a list of gate names (ratio, ref_kl, grad, moved, parity, lora) or of the hypotheses they point to
    (h08, h18, h19, h25, h14, h06) on those gates; any other name is refused, since it would never stop anything.
    ``options``: gates (False: none), task_reward, reference_column, record (False: no registry record),
    registry (URL). Call it once per trainer: a script that trains twice watches each trainer the same way.
    """
    return Watch(hypotheses, hooks, stop_on, **options).attach(trainer)


def _check_trainer(trainer: Any) -> None:
    """A GRPOTrainer (TRL's or a subclass, the user's own included) is what watch instruments; anything else is
    refused with what was passed and what to pass instead."""
    from hypotrack.session.trl_seams import has_seams

    if isinstance(trainer, Trainer) and has_seams(trainer):
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
