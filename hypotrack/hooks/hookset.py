"""`HookSet`: the one dispatcher between a trainer and its diagnostics hooks.

Whoever drives training (hypotrack's own GRPOTrainer subclass, or a user's trainer instrumented by
`hypotrack.watch`) hands each event to the HookSet; the HookSet calls the hooks that handle it (a hook
handles an event by overriding it, hooks/base.py) and records what they return as
``diag/<hook>/<metric>`` through the ``record`` function it was given (TRL's metric buffer, so the
values are averaged per logging step like ``reward``). Imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hypotrack.hooks.base import EVENTS, DiagnosticHook, LossParts, RolloutBatch, StepContext

Record = Callable[[str, float], None]


class HookSet:
    def __init__(self, hooks: Iterable[DiagnosticHook], record: Record | None = None) -> None:
        self.hooks = list(hooks)
        self.record: Record = record or (lambda key, value: None)
        self._handlers = {event: [h for h in self.hooks if type(h).handles(event)] for event in EVENTS}

    def __bool__(self) -> bool:
        return bool(self.hooks)

    def __iter__(self):
        return iter(self.hooks)

    def wants(self, event: str) -> bool:
        """Whether any hook handles ``event`` (the trainer skips building its argument otherwise)."""
        return any(hook.active for hook in self._handlers[event])

    def _dispatch(self, event: str, *args: Any) -> None:
        for hook in self._handlers[event]:
            if not hook.active:
                continue
            for key, value in (getattr(hook, event)(*args) or {}).items():
                self.record(f"diag/{hook.name}/{key}", float(value))

    def train_begin(self, ctx: StepContext) -> None:
        self._dispatch("on_train_begin", ctx)

    def rollout(self, batch: RolloutBatch, step: int) -> None:
        self._dispatch("on_rollout", batch, step)

    def loss(self, parts: LossParts, step: int) -> None:
        self._dispatch("on_loss", parts, step)

    def before_optimizer_step(self, ctx: StepContext) -> None:
        self._dispatch("on_before_optimizer_step", ctx)

    def step_end(self, ctx: StepContext) -> None:
        self._dispatch("on_step_end", ctx)

    def train_end(self, ctx: StepContext) -> None:
        self._dispatch("on_train_end", ctx)

    def close(self) -> None:
        """Remove the torch hooks every hook registered on the model."""
        for hook in self.hooks:
            hook.close()

    def write_artifacts(self, out_dir: Path) -> list[tuple[str, Exception]]:
        """Each hook's end-of-run artifacts; the hooks that failed, with why (a broken artifact must not
        fail a finished run)."""
        failed: list[tuple[str, Exception]] = []
        for hook in self.hooks:
            try:
                hook.write_artifacts(out_dir)
            except Exception as exc:  # noqa: BLE001 - every hook writes; the failures are reported together
                failed.append((hook.name, exc))
        return failed
