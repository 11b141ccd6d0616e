"""h19 no gradient reaches the trained weights: which trainable parameters the backward pass reached.

Reentrant gradient checkpointing recomputes a layer in the backward pass from its inputs; when none of
them requires grad (frozen input embeddings, a PEFT model without `enable_input_require_grads`), the
layer's trainable weights get no gradient at all (trl#2671, trl#3150: "None of the inputs have
requires_grad=True"). The run goes on: the loss is logged, the weights outside the checkpointed layers (or
none) train. TRL logs one gradient norm; this hook looks at every trainable tensor at each optimizer step
(after accumulation, before the optimizer), on steps whose rollouts had a group whose rewards differ (a
step where every group tied has zero advantages and rightly no gradient):

- `no_grad_share`: the share of trainable parameters (by element count) the backward pass never reached
  (no gradient tensor at all); all of them when every gradient is 0. A single tensor at 0 is no sign: a
  fresh LoRA adapter's A matrices get exactly 0 at the first step, since their B matrices start at 0.
- `grad_norm`: the norm of all trainable gradients together.
"""
from __future__ import annotations

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch, StepContext


class GradientFlowHook(DiagnosticHook):
    name = "gradient_flow"
    description = "h19: the share of trainable parameters the backward pass gave no gradient, on steps with reward variance"
    metrics = ("no_grad_share", "grad_norm")

    def __init__(self, **settings) -> None:
        super().__init__(**settings)
        self._variance = False

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        from hypotrack.hooks._util import some_group_varies

        self._variance = self._variance or some_group_varies(batch)
        return {}

    def on_before_optimizer_step(self, ctx: StepContext) -> dict[str, float]:
        from hypotrack.hooks._util import gradient_reach, trained_parameters

        varied, self._variance = self._variance, False
        params = trained_parameters(ctx)
        if not varied or not params:
            return {}
        share, norm = gradient_reach(params)
        return {"no_grad_share": share, "grad_norm": norm}
