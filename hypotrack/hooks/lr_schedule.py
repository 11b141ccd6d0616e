"""h22 a learning-rate schedule on the wrong horizon: is the rate spent while steps remain?

A schedule built for the wrong number of steps (counting batches or micro-batches where the optimizer
steps once per several; SkyRL PR #873) decays to about 0 long before the run ends, and the reward
plateaus from there while the run looks healthy. At each optimizer step, the rate the optimizer uses:

- `of_peak`: the rate over the highest rate of the run so far.
- `spent_early`: 1 when the rate is below 5% of that peak while a quarter or more of the run's steps
  remain, else 0 (a schedule that decays to 0 by design gets there in the last steps).
"""
from __future__ import annotations

from hypotrack.hooks.base import DiagnosticHook, StepContext
from hypotrack.thresholds import LR_REMAINING, LR_SPENT


class LrScheduleHook(DiagnosticHook):
    name = "lr_schedule"
    description = "h22: the learning rate against its peak, and whether it is spent while a quarter of the run remains"
    metrics = ("of_peak", "spent_early")

    def __init__(self, **settings) -> None:
        super().__init__(**settings)
        self._peak = 0.0

    def on_before_optimizer_step(self, ctx: StepContext) -> dict[str, float]:
        optimizer = getattr(ctx.trainer, "optimizer", None)
        if optimizer is None or not optimizer.param_groups:
            return {}
        rate = float(optimizer.param_groups[0]["lr"])
        self._peak = max(self._peak, rate)
        if self._peak <= 0:
            return {}
        total = int(getattr(ctx.trainer.state, "max_steps", 0) or 0)
        remaining = (total - ctx.step) / total if total else 0.0
        return {"of_peak": rate / self._peak,
                "spent_early": float(rate < LR_SPENT * self._peak and remaining >= LR_REMAINING)}
