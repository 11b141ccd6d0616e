"""h25 trained weights the optimizer never updates: does every weight that gets a gradient move at the step?

A script that builds its optimizer from `model.parameters()` and passes it with a `peft_config` hands TRL an
optimizer of the base weights: the LoRA adapters are added afterwards, so the optimizer holds none of them
(adapter-hub/adapters#260: "the optimizer is missing the adapter parameters"; an optimizer that picked the
wrong adapter's tensors, gke-labs/open-rl PR #80). The backward pass reaches the adapters, TRL's grad_norm
looks healthy, the loss is logged, and nothing trains. During the first ``steps`` optimizer steps:

- `outside_share`: the share of the trainable weights (by element count) that the optimizer does not hold;
- `unmoved_share`: of the trainable tensors that got a gradient at the step (not all zero), the share (by
  element count) whose values did not change over the optimizer step. A weight the optimizer holds moves at
  its first step with a gradient (Adam's step is about the learning rate, whatever the gradient's size).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, StepContext


class OptimizerCoverageHook(DiagnosticHook):
    name = "optimizer_coverage"
    description = ("h25: trainable weights the optimizer does not hold, and weights that got a gradient but did not "
                   "move at the optimizer step")
    metrics = ("outside_share", "unmoved_share")

    @dataclass(frozen=True)
    class Settings:
        steps: int = 2
        """Optimizer steps checked, from the first (a weight the optimizer holds moves at its first step with a
        gradient, so a few are enough)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._checked = 0
        self._moving: list[Any] = []
        self._before: Any = None

    def on_before_optimizer_step(self, ctx: StepContext) -> dict[str, float]:
        from hypotrack.hooks._util import fingerprints, optimizer_coverage, with_gradient

        outside, trainable = optimizer_coverage(ctx)
        self._moving = with_gradient(trainable)
        self._before = fingerprints(self._moving)
        return {"outside_share": outside}

    def on_step_end(self, ctx: StepContext) -> dict[str, float]:
        from hypotrack.hooks._util import unmoved_share

        if self._before is None:
            return {}
        share = unmoved_share(self._moving, self._before)
        self._moving, self._before = [], None
        self._checked += 1
        if self._checked >= self.config.steps:
            self.active = False
        return {"unmoved_share": share}
