"""h18 a wrong reference model: before the first update the policy is its own reference, so their KL is 0.

GRPO's KL term pulls the policy towards a reference that should be the policy the run starts from. A
run that continues from a trained LoRA adapter and computes the reference with the adapters off (TRL
before PR #6591: trl#3194, trl#3031) pulls towards the base model instead; a reference loaded from
another checkpoint does the same. Before any optimizer step the two must agree token for token, so
the first loss computation is the test:

- `kl`: the mean per-token KL (k3, as TRL estimates it) between policy and reference over the completion
  tokens of the first step, before any optimizer step has moved the policy.
- `logp_max_diff`: the largest per-token |logp_policy - logp_reference| in the same tokens.

Nothing is reported without a KL term (no reference logprobs); the hook stops after the first step.
"""
from __future__ import annotations

from hypotrack.hooks.base import DiagnosticHook, LossParts, StepContext


class ReferenceStartHook(DiagnosticHook):
    name = "reference_start"
    description = "h18: KL between the policy and its reference before the first optimizer step (0 when they agree)"
    metrics = ("kl", "logp_max_diff")

    def on_loss(self, parts: LossParts, step: int) -> dict[str, float]:
        if parts.ref_per_token_logps is None:
            return {}
        from hypotrack.hooks._util import masked_max, masked_mean

        delta = parts.ref_per_token_logps.float() - parts.per_token_logps.detach().float()
        return {"kl": masked_mean(delta.exp() - delta - 1, parts.mask),
                "logp_max_diff": masked_max(delta.abs(), parts.mask)}

    def on_before_optimizer_step(self, ctx: StepContext) -> dict[str, float]:
        self.active = False  # the policy moves now: later differences are training, not the reference
        return {}
